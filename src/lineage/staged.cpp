#include "lineage/staged.h"

#include <algorithm>

#include "core/text.h"

namespace lathe::lineages {
namespace {

std::set<std::string> names_of(const std::vector<feature>& fs) {
  std::set<std::string> out;
  for (const auto& f : fs) out.insert(f.name);
  return out;
}

}  // namespace

stage_score score_against_stages(const std::vector<stage>& stages, const lineage& walk,
                                 const std::set<std::string>& vocabulary) {
  stage_score out;
  // What the walk removed: in the optimizing direction, each step's `added` features; the last
  // step (the expert's) was the walk's first.
  std::set<std::string> removed;
  for (auto it = walk.steps.rbegin(); it != walk.steps.rend(); ++it)
    for (const auto& f : it->added)
      if (removed.insert(f.name).second) out.walk_removed.push_back(f.name);
  for (size_t i = 0; i + 1 < stages.size(); ++i) {
    stage_transition_score s;
    s.from = stages[i].kernel;
    s.to = stages[i + 1].kernel;
    const auto before = names_of(stages[i].features), after = names_of(stages[i + 1].features);
    for (const auto& n : after)
      if (!before.count(n) && (vocabulary.empty() || vocabulary.count(n))) s.expected.push_back(n);
    for (const auto& n : s.expected)
      if (removed.count(n)) s.recovered.push_back(n);
    if (s.full())
      ++out.recovered;
    else if (!s.recovered.empty())
      ++out.partial;
    out.transitions.push_back(std::move(s));
  }
  return out;
}

std::string stage_score::describe() const {
  std::string out = cat("recovered ", std::to_string(recovered), " of ", std::to_string(transitions.size()),
                        " stage transitions (", std::to_string(partial), " partly); the walk removed: ",
                        walk_removed.empty() ? std::string("nothing") : join(walk_removed, ", "), "\n");
  for (const auto& t : transitions)
    out += cat("  ", t.from, " -> ", t.to, ": adds ", t.expected.empty() ? std::string("(nothing detected)") : join(t.expected, ", "),
               "; recovered ", t.recovered.empty() ? std::string("none") : join(t.recovered, ", "), "\n");
  return out;
}

}  // namespace lathe::lineages
