#include "search/strategy.h"

#include <algorithm>
#include <cstdio>

#include "core/text.h"

namespace lathe::search {

const char* to_string(strategy s) {
  switch (s) {
    case strategy::none: return "none";
    case strategy::forward_memory: return "forward-memory";
    case strategy::skills: return "skills";
    case strategy::expert_source: return "expert-source";
  }
  return "?";
}

std::optional<strategy> parse_strategy(std::string_view text) {
  for (strategy s : {strategy::none, strategy::forward_memory, strategy::skills, strategy::expert_source})
    if (text == to_string(s)) return s;
  return std::nullopt;
}

std::string to_string(const ablation& a) {
  std::vector<std::string> on;
  if (a.intent_only) on.push_back("intent-only");
  if (a.no_preconditions) on.push_back("no-preconditions");
  if (a.no_admission) on.push_back("no-admission");
  if (a.no_lineage_order) on.push_back("no-lineage-order");
  return on.empty() ? "none" : join(on, ",");
}

result<ablation> parse_ablation(std::string_view text) {
  ablation a;
  size_t at = 0;
  while (at <= text.size()) {
    const size_t comma = std::min(text.find(',', at), text.size());
    std::string item(text.substr(at, comma - at));
    at = comma + 1;
    while (!item.empty() && item.back() == ' ') item.pop_back();
    while (!item.empty() && item.front() == ' ') item.erase(item.begin());
    if (item.empty() || item == "none") continue;
    if (item == "intent-only") a.intent_only = true;
    else if (item == "no-preconditions") a.no_preconditions = true;
    else if (item == "no-admission") a.no_admission = true;
    else if (item == "no-lineage-order") a.no_lineage_order = true;
    else
      return fail(errc::invalid_argument, "unknown ablation '" + item +
                                              "' (intent-only, no-preconditions, no-admission, no-lineage-order)");
  }
  return a;
}

skill_card ablated(const skill_card& c, const ablation& a) {
  skill_card out = c;
  if (a.intent_only) {
    skill_card bare;
    bare.id = c.id;
    bare.name = c.name;
    bare.intent = c.intent;
    bare.op = c.op;
    bare.provides_features = c.provides_features;
    bare.status = c.status;
    return bare;
  }
  if (a.no_preconditions) {
    out.preconditions.clear();
    out.constraints.clear();
    out.risk.clear();
    out.requires_features.clear();
    out.conflicts_features.clear();
  }
  if (a.no_admission) {
    // The admission record is withheld with the status it produced.
    out.trials.clear();
    out.status_reason.clear();
  }
  return out;
}

std::string memory_direction(const std::vector<memory_entry>& memory) {
  if (memory.empty()) return plain_direction();
  std::string out =
      "Make the kernel faster. Earlier steps of this run that lathe verified faster (your own memory, "
      "oldest first):\n";
  for (const auto& m : memory) {
    char ratio[32];
    std::snprintf(ratio, sizeof ratio, "%.3f", m.ratio);
    out += cat("- step ", std::to_string(m.step), ": ", m.action, " at ", m.locus, ", paired ", ratio, "x",
               m.added.empty() ? "" : ", added " + join(m.added, ", "), "\n");
    if (!m.edits.empty()) out += "  edit:\n" + m.edits + "\n";
  }
  return out;
}

std::string plain_direction() {
  return "Make the kernel faster on this target: one focused, correct change.";
}

std::string expert_direction(const std::vector<std::string>& expert_names) {
  return "Make the kernel faster on this target: one focused, correct change. The inspirations are "
         "expert kernels of other operators (" +
         join(expert_names, ", ") +
         "): borrow the mechanisms that would pay here, not their text.";
}

}  // namespace lathe::search
