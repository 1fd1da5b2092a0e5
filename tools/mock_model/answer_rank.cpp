// rank_paths: paths that add what the kernel lacks first. A path's score is the number of
// registry names its summary mentions that the kernel does not have (neither in the `features`
// field nor seen in its source); ties are broken by a seeded draw, so seeds differ only where
// the kernel gives no reason to prefer.
#include <algorithm>
#include <regex>

#include "answers.h"
#include "detect.h"

namespace lathe::mock {

answer_result answer_rank(const context& c) {
  const auto paths_value = field(c.p.user, "paths", c.p.operation);
  const auto features_value = field(c.p.user, "features", c.p.operation);
  std::vector<std::string> have;
  for (const auto& l : feature_lines(features_value ? *features_value : std::string()))
    have.push_back(l.name);
  if (auto k = operation_kernel(c.p, c.dir, false))
    for (const auto& f : present_features(*k)) have.push_back(f);

  struct option {
    std::string id, summary;
    std::vector<std::string> adds;
    uint64_t tie = 0;
  };
  std::vector<option> options;
  static const std::regex path_line(
      R"(^[ \t]*(?:[-*][ \t]+)?`?([A-Za-z0-9_.:/+-]+?)`?[ \t]*:[ \t]*(.*)$)");
  auto tie = c.choose.for_purpose("rank");
  for (const auto& line : split_lines(paths_value ? *paths_value : std::string())) {
    std::smatch m;
    if (!std::regex_match(line, m, path_line)) continue;
    option o{m[1], m[2], {}, tie.next()};
    for (const auto& n : registry_names_in(o.summary))
      if (std::find(have.begin(), have.end(), n) == have.end()) o.adds.push_back(n);
    options.push_back(std::move(o));
  }
  std::stable_sort(options.begin(), options.end(), [](const option& a, const option& b) {
    if (a.adds.size() != b.adds.size()) return a.adds.size() > b.adds.size();
    return a.tie < b.tie;
  });
  answer a;
  auto order = nlohmann::ordered_json::array();
  for (const auto& o : options) {
    std::string reason;
    if (o.adds.empty()) {
      reason = "adds nothing the kernel lacks";
    } else {
      reason = "adds ";
      for (size_t i = 0; i < o.adds.size(); ++i)
        reason += (i == 0 ? "" : i + 1 == o.adds.size() ? " and " : ", ") + o.adds[i];
      reason += ", which the kernel lacks";
    }
    order.push_back({{"id", o.id}, {"reason", reason}});
  }
  a.body["order"] = order;
  a.notes.push_back("ranked " + std::to_string(options.size()) + " path(s)");
  return a;
}

}  // namespace lathe::mock
