// What a search tells the proposer of where it stands (agent::progress_facts, the `progress`
// field of v2 prompts): kept from the search's own measurements as they come.
#pragma once

#include <optional>
#include <string>

#include "agent/proposer.h"
#include "core/target.h"
#include "core/task.h"
#include "llm/budget.h"

namespace lathe::search {

// "4 steps, 30 evaluations, 12 model calls, 1620 s" of what `bounds` still allow after `used`;
// empty when nothing is bounded.
std::string budget_left_text(const llm::limits& bounds, const llm::amounts& used);

// The times a search has measured, each from a paired evaluation of a candidate against the best
// (or the start) kernel.
class progress_tracker {
 public:
  progress_tracker(const task& t, const target& host) : t_(t), host_(host) {}
  // One timed evaluation of a candidate: `against_seconds` the median of the kernel it was paired
  // with (the start or the best), `floor` the roofline floor (absent without a ceiling).
  void timed(bool against_start, bool against_best, std::optional<double> against_seconds,
             std::optional<double> floor);
  // A timed decision's noise rule (the last one is what the proposer is told): its margin, the
  // A/A interval it came from and the reach past which the machine is too noisy to decide.
  void decided(double margin, std::optional<double> aa_low, std::optional<double> aa_high,
               std::optional<double> aa_unstable);
  // The candidate was accepted, re-measured at `seconds`; best_ratio is the search's product.
  void accepted(std::optional<double> seconds, double best_ratio);
  agent::progress_facts facts(int32_t step, std::optional<int64_t> steps, const llm::limits& bounds,
                              const llm::amounts& used) const;

 private:
  const task& t_;
  target host_;
  std::optional<double> start_, best_, floor_;
  double ratio_ = 1.0;
  int32_t accepted_ = 0;
  bool best_is_start_ = true;
  std::optional<double> margin_, aa_low_, aa_high_, aa_unstable_;
};

}  // namespace lathe::search
