// audit_features: present/absent per asked name by source patterns (detect.h), citing the lines
// of the numbered kernel the prompt showed. At the wrong rate one verdict cites a comment line,
// or a line past the end of the file, which lathe's citation check must refuse.
#include <algorithm>
#include <regex>

#include "answers.h"
#include "core/feature_registry.h"
#include "detect.h"
#include "source.h"

namespace lathe::mock {
namespace {

// The asked names: those that open a line of the field ("- simd: explicit vector…"); the
// definitions that follow may mention other names, which were not asked.
std::vector<std::string> asked_names(const std::string& value) {
  static const std::regex opening(R"(^[ \t]*(?:[-*][ \t]+)?[`*]*([a-z_]+)[`*]*\b.*$)");
  std::vector<std::string> out;
  for (const auto& line : split_lines(value)) {
    std::smatch m;
    if (!std::regex_match(line, m, opening) || !find_feature(m[1].str())) continue;
    if (std::find(out.begin(), out.end(), m[1].str()) == out.end()) out.push_back(m[1]);
  }
  return out.empty() ? registry_names_in(value) : out;
}

nlohmann::ordered_json cite(const std::string& file, size_t first, size_t last) {
  return {{"file", file}, {"first", first}, {"last", last}};
}

}  // namespace

answer_result answer_audit(const context& c) {
  // The prompt's numbered listing is what the citations refer to; the directory is a fallback.
  auto kernel = operation_kernel(c.p, c.dir, false);
  if (!kernel) return tl::unexpected(kernel.error());
  const auto value = field(c.p.user, "features", c.p.operation);
  const auto names = asked_names(value ? *value : std::string());
  answer a;
  auto verdicts = nlohmann::ordered_json::array();
  std::vector<size_t> present;
  for (const auto& name : names) {
    const auto hits = detect(*kernel, name);
    nlohmann::ordered_json v;
    v["name"] = name;
    v["status"] = hits.empty() ? "absent" : "present";
    v["locus"] = hits.empty() ? "" : hits.front().function;
    auto cites = nlohmann::ordered_json::array();
    for (size_t i = 0; i < hits.size() && i < 3; ++i)
      cites.push_back(cite(hits[i].path, hits[i].line, hits[i].line));
    v["citations"] = cites;
    v["note"] =
        hits.empty()
            ? "no code line of the kernel shows " + name
            : "seen at " + hits.front().path + ":" + std::to_string(hits.front().line) +
                  (hits.size() > 1 ? " and " + std::to_string(hits.size() - 1) + " more line(s)"
                                   : "");
    if (!hits.empty()) present.push_back(verdicts.size());
    verdicts.push_back(std::move(v));
  }
  if (c.f.wrong && !verdicts.empty()) {
    // A present verdict backed by no code: cited at a comment line when the file has one, else
    // past its end. Without present verdicts, an absent one is claimed present the same way.
    auto ws = c.choose.for_purpose("wrong_kind");
    const size_t pick =
        present.empty() ? ws.below(verdicts.size()) : present[ws.below(present.size())];
    auto& v = verdicts[pick];
    const std::string file =
        !v["citations"].empty()
            ? v["citations"][0]["file"].get<std::string>()
            : (kernel->entry.empty() ? kernel->files.begin()->first : kernel->entry);
    const source_view src(kernel->files.count(file) ? kernel->files.at(file) : std::string());
    size_t line = 0;
    for (size_t l = 0; l < src.line_count() && line == 0; ++l)
      if (!trim(src.line(l)).empty() && src.blank_or_comment(l)) line = l + 1;
    const bool comment = line != 0;
    if (!comment) line = src.line_count() + 7;
    v["status"] = "present";
    v["citations"] = nlohmann::ordered_json::array({cite(file, line, line)});
    a.notes.push_back("wrong answer (" + std::string(comment ? "comment" : "out_of_range") +
                      " citation) for " + v["name"].get<std::string>() + " at " + file + ":" +
                      std::to_string(line));
  }
  a.body["verdicts"] = verdicts;
  a.notes.push_back("audited " + std::to_string(names.size()) + " feature(s), " +
                    std::to_string(present.size()) + " present");
  return a;
}

}  // namespace lathe::mock
