// How `optimize` uses memory (DESIGN.md vocabulary "strategy") and the ablation switches of the
// card fields the proposer sees (issue 7, item 2; docs/optimize.md). Every strategy runs the same
// loop under the same budget, gate and proposer; they differ only in what the proposer is given:
//
//   none            the kernel, the task, the target and the rejected attempts: nothing else
//   forward-memory  also the run's own accepted steps (AccelOpt-style memory), and nothing else
//   skills          cards of the library, retrieved and ordered from the kernel's verified features
//   expert-source   the source code of the experts the library was mined from, instead of cards
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/card.h"
#include "core/error.h"
#include "core/kernel.h"

namespace lathe::search {

enum class strategy : uint8_t { none, forward_memory, skills, expert_source };
const char* to_string(strategy s);  // "none", "forward-memory", "skills", "expert-source"
std::optional<strategy> parse_strategy(std::string_view text);
// The words parse_strategy takes, the default first: what an error about an unknown one lists.
inline constexpr const char* strategy_words = "skills, none, forward-memory, expert-source";

// What is withheld from the proposer (the skills strategy; the others use no cards).
struct ablation {
  bool intent_only = false;       // a card is its name, intent and provided features only
  bool no_preconditions = false;  // preconditions, constraints and risk withheld; retrieval
                                  // does not filter by constraints either
  bool no_admission = false;      // every card of the library, admitted, candidate or refused
  bool no_lineage_order = false;  // cards in score order, not in the order of their lineage path
  bool any() const { return intent_only || no_preconditions || no_admission || no_lineage_order; }
};
// "intent-only,no-preconditions,no-admission,no-lineage-order" (set ones, that order); "none".
std::string to_string(const ablation& a);
// A comma-separated list of those names ("none" or empty: nothing withheld).
result<ablation> parse_ablation(std::string_view text);

// The card as the proposer sees it under `a`: fields withheld are emptied. The id and name stay
// (the run's records name the card), and so do the provided features (what the card is about).
skill_card ablated(const skill_card& c, const ablation& a);

// One accepted step of the run as forward-memory shows it to the proposer.
struct memory_entry {
  int32_t step = 0;
  std::string action, locus;
  std::vector<std::string> added;
  double ratio = 1.0;     // the re-measured paired ratio of the step
  std::string edits;      // the step's edit text (trimmed)
};
// The `direction` text of a forward-memory mutation: the entries, newest last.
std::string memory_direction(const std::vector<memory_entry>& memory);
// The direction of a mutation with no memory, and of expert-source (which names the experts).
std::string plain_direction();
std::string expert_direction(const std::vector<std::string>& expert_names);

}  // namespace lathe::search
