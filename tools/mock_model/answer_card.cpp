// abstract_card: a skill card from one step. What the step provides is what the `after` kernel
// shows and the `before` kernel does not (detect.h); the carrier is the step's diff; intent, risk
// and preconditions come from a small table per mechanism.
#include <algorithm>
#include <regex>

#include "answers.h"
#include "core/feature_registry.h"
#include "detect.h"
#include "diff_edits.h"
#include "source.h"

namespace lathe::mock {
namespace {

struct card_text {
  const char* feature;
  const char* precondition;
  const char* risk;
};

const card_text table[] = {
    {"loop_unroll", "the loop's body has no loop-carried dependence the unrolling would reorder",
     "more registers per thread; a large factor can lower occupancy or spill"},
    {"restrict", "the pointers never alias (lathe's tensors never do)",
     "wrong results if a caller ever passes overlapping buffers"},
    {"omp_parallel", "the loop's iterations write disjoint outputs and share no scalar",
     "a data race when an iteration writes a shared scalar; thread start-up on small shapes"},
    {"simd", "the loop is innermost and its only loop-carried values are sums",
     "reassociated sums change rounding in the last bits"},
    {"read_only_load", "the loaded data is not written during the kernel",
     "none for correctness; no gain when loads already go through the read-only path"},
    {"launch_bounds", "every launch of the kernel uses at most the declared block size",
     "a launch with a larger block fails; a tight bound can force spills"},
    {"fast_math", "the task's tolerance admits the intrinsics' error (a few ulp)",
     "larger error for large arguments"},
};

const card_text* text_for(const std::string& f) {
  for (const auto& t : table)
    if (f == t.feature) return &t;
  return nullptr;
}

std::string field_or_empty(const prompt& p, std::string_view name) {
  auto v = field(p.user, name, p.operation);
  return v ? *v : std::string();
}

}  // namespace

answer_result answer_card(const context& c) {
  answer a;
  const std::string step = field_or_empty(c.p, "step");
  const auto before = bundle_from_text(field_or_empty(c.p, "before"));
  const auto after = bundle_from_text(field_or_empty(c.p, "after"));
  std::vector<std::string> provides, needs;
  if (before && after) {
    const auto was = present_features(*before), now = present_features(*after);
    for (const auto& f : now)
      if (std::find(was.begin(), was.end(), f) == was.end()) provides.push_back(f);
  }
  if (provides.empty()) {
    // The step's own words: the names on an "added" line, else every name it mentions.
    for (const auto& line : split_lines(step))
      if (line.find("add") != std::string::npos)
        for (const auto& n : registry_names_in(line)) provides.push_back(n);
    if (provides.empty()) provides = registry_names_in(step);
  }
  if (provides.empty()) provides.push_back("loop_unroll");  // nothing to go on; see `scope`
  if (provides.size() > 3) provides.resize(3);
  const std::string& mechanism = provides.front();
  // read_only_load through `const __restrict__` needs the qualifier it rides on.
  if (mechanism == "read_only_load" && after && !detect(*after, "restrict").empty() &&
      std::find(provides.begin(), provides.end(), "restrict") == provides.end())
    needs.push_back("restrict");

  std::string locus;
  static const std::regex locus_line(R"(locus\s*[:=]\s*([^\s,;]+))");
  std::smatch m;
  if (std::regex_search(step, m, locus_line)) locus = m[1];
  std::string carrier = field_or_empty(c.p, "diff");
  if (trim(carrier).empty() || trim(carrier) == "(none)") {
    if (before && after) carrier = agent::render_edits(edits_between(*before, *after));
  }
  if (trim(carrier).empty()) carrier = "(no diff was shown)";
  std::string speedup;
  static const std::regex speed(R"(speedup[^0-9]*([0-9]+(?:\.[0-9]+)?))", std::regex::icase);
  if (std::regex_search(step, m, speed)) speedup = m[1];
  std::string op = "this operator";
  static const std::regex operator_line(R"(operator\s*[:=]\s*"?([A-Za-z0-9_]+))");
  const std::string task = field_or_empty(c.p, "task");
  if (std::regex_search(task, m, operator_line)) op = m[1];
  const std::string target = trim(field_or_empty(c.p, "target"));
  const bool cuda = (before && before->cuda) || target_is_cuda(target);

  const card_text* t = text_for(mechanism);
  const auto* def = find_feature(mechanism);
  auto& b = a.body;
  b["intent"] = "Add " + mechanism + ": " + std::string(def ? def->definition : "");
  b["anchor"] = locus.empty() ? "the loop or function the diff touches"
                              : "the code at " + locus + " (the loop or function the diff touches)";
  b["carrier"] = carrier;
  b["preconditions"] = nlohmann::ordered_json::array(
      {t ? t->precondition : "the mechanism's definition holds at the anchor",
       std::string("the kernel runs on ") + (cuda ? "a CUDA device" : "the CPU")});
  // Nothing the catalog adds needs a capability, a shared-memory size, a dtype, an alignment or a
  // divisibility (core/card.h's checkable kinds): no constraint.
  b["constraints"] = nlohmann::ordered_json::array();
  b["effect"] = speedup.empty() ? "faster at the anchor (the step's speedup was not given)"
                                : "measured speedup " + speedup + "x on the source step";
  b["risk"] = t ? t->risk : "unknown beyond the gate's checks";
  b["scope"] = op + " kernels on " + (cuda ? "CUDA" : "the CPU");
  b["requires"] = needs;
  b["provides"] = provides;
  b["conflicts"] = nlohmann::ordered_json::array();
  a.notes.push_back("card providing " + mechanism);
  return a;
}

}  // namespace lathe::mock
