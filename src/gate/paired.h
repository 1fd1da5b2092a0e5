// Paired-ratio statistics (PROTOCOL.md "Timing"). Candidate and baseline alternate in blocks in
// randomized order; each round gives one ratio b/a. We work in log space: a ratio and its
// inverse are symmetric there, and block-to-block drift of the machine cancels within a round.
// The confidence interval comes from the between-round variance (Student t), not from the
// within-block samples, which are correlated.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "core/decision.h"

namespace lathe {
struct paired_series;
struct timing_policy;
enum class platform : uint8_t;
}

namespace lathe::gate {

struct ratio_estimate {
  double ratio = 0;     // exp(mean(log(b/a))): > 1 means A is faster than B
  double ci_low = 0;    // 95% confidence interval of the ratio
  double ci_high = 0;
  double rse = 0;       // standard error of mean(log ratio) ≈ relative standard error
  size_t rounds = 0;
  // estimate_ratio_grouped: the pairs differed (the F test) and their means carried the
  // interval, with pairs - 1 degrees of freedom: few pairs then give a wide interval that more
  // pairs would narrow (evaluator::time_all times such a stage again with more).
  bool pairs_differ = false;
};

// a[i], b[i]: seconds per call of A and B in round i. Rounds with a non-positive time are
// ignored. Fewer than two usable rounds: ratio from what there is, infinite interval.
ratio_estimate estimate_ratio(const std::vector<double>& a, const std::vector<double>& b);

// The same with rounds grouped by the process pair that ran them. Each process has its own
// memory layout and placement, which shifts its speed for the whole run; rounds of one pair
// share that shift, so they are not independent evidence. The standard error is the larger of
// the round-level one and the one from the pair means (df = pairs - 1): with identical
// processes this is the plain estimate, with process effects it widens honestly.
ratio_estimate estimate_ratio_grouped(const std::vector<double>& a, const std::vector<double>& b,
                                      const std::vector<uint8_t>& group);
// A recorded series' interval came from its pair means (estimate_ratio_grouped's pairs_differ).
bool pairs_differ(const paired_series& s);

// Two-sided 95% quantile of Student's t with `df` degrees of freedom.
double t975(size_t df);

double median(std::vector<double> v);
// Median absolute deviation divided by the median: a dispersion robust to outliers.
double relative_mad(const std::vector<double>& v);

// The decision margin: a candidate counts as faster only when its ratio clears 1 + epsilon,
// epsilon at least three times the A/A spread and never below `floor` (PROTOCOL.md).
double decision_epsilon(const ratio_estimate& aa, double floor);
// The same from an evaluation's recorded A/A series. Its interval is infinite when it had fewer than
// two rounds: so is epsilon then. None recorded (zeros): the floor.
double decision_epsilon(const paired_series& aa, double floor);

// The floor of epsilon: 5% on the CPU (a shared VM's timing noise is 10-15%), 1% on CUDA
// (CUDA-graph replays vary by under 0.5%).
double decision_floor(platform p);

// The gate's one decision rule (PROTOCOL.md), for every verb: epsilon from the A/A control
// (decision_epsilon; the floor when there is none); "faster" when the candidate's interval
// clears 1 + epsilon, "slower" when it stays below 1 / (1 + epsilon), "same" between them;
// "undecided" when the A/A interval reaches past policy.aa_unstable (or is infinite) and the
// candidate's interval comes within epsilon of 1: an effect far beyond the machine's noise is
// decided however noisy the machine (5.7x-9.3x kernels were refused as unstable on a loaded VM).
struct decision_result {
  lathe::decision decision = lathe::decision::undecided;
  double epsilon = 0;
};
decision_result decide(const paired_series& candidate, const paired_series* aa,
                       const timing_policy& policy, double floor);

}  // namespace lathe::gate
