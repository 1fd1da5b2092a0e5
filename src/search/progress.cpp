// Where a search stands, for the proposer (search/progress.h).
#include "search/progress.h"

#include <algorithm>
#include <cstdio>
#include <vector>

#include "agent/situation_text.h"
#include "core/text.h"
#include "verify/verifier.h"

namespace lathe::search {

std::string budget_left_text(const llm::limits& bounds, const llm::amounts& used) {
  const budget& b = bounds.run;
  std::vector<std::string> parts;
  auto whole = [&](const std::optional<int64_t>& cap, int64_t spent, const char* what) {
    if (cap) parts.push_back(std::to_string(std::max<int64_t>(0, *cap - spent)) + " " + what);
  };
  whole(b.steps, used.steps, "step(s)");
  whole(b.evals, used.evals, "evaluation(s)");
  whole(bounds.calls, used.calls, "model call(s)");
  whole(b.tokens, used.tokens, "token(s)");
  if (b.usd) {
    char buf[32];
    std::snprintf(buf, sizeof buf, "$%.2f", std::max(0.0, *b.usd - used.usd));
    parts.push_back(buf);
  }
  if (b.seconds) parts.push_back(std::to_string(static_cast<int64_t>(std::max(0.0, *b.seconds - used.seconds))) + " s");
  return join(parts, ", ");
}

void progress_tracker::timed(bool against_start, bool against_best, std::optional<double> against_seconds,
                             std::optional<double> floor) {
  if (floor && *floor > 0) floor_ = floor;
  if (!against_seconds || !(*against_seconds > 0)) return;
  if (against_start) start_ = against_seconds;  // the latest reading of each
  if (against_best) best_ = against_seconds;
}

void progress_tracker::decided(double margin, std::optional<double> aa_low, std::optional<double> aa_high,
                               std::optional<double> aa_unstable) {
  margin_ = margin;
  aa_low_ = aa_low;
  aa_high_ = aa_high;
  aa_unstable_ = aa_unstable;
}

void progress_tracker::accepted(std::optional<double> seconds, double best_ratio) {
  ++accepted_;
  best_is_start_ = false;
  ratio_ = best_ratio;
  if (seconds && *seconds > 0) best_ = seconds;
}

agent::progress_facts progress_tracker::facts(int32_t step, std::optional<int64_t> steps, const llm::limits& bounds,
                                              const llm::amounts& used) const {
  agent::progress_facts p;
  p.start_seconds = start_;
  p.best_seconds = best_is_start_ ? start_ : best_;
  p.best_ratio = ratio_;
  p.accepted = accepted_;
  p.floor_seconds = floor_;
  p.roofline = agent::roofline_text(t_, host_, floor_);
  p.floor_memory_only = t_.cost.flops.empty();
  p.step = step;
  p.steps = steps;
  p.budget_left = budget_left_text(bounds, used);
  p.margin_floor = lineages::margin_floor(t_.plat);
  p.margin = margin_;
  p.aa_low = aa_low_;
  p.aa_high = aa_high_;
  p.aa_unstable = aa_unstable_;
  return p;
}

}  // namespace lathe::search
