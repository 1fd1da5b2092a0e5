#include <cstdint>
#include "gate/paired.h"

#include "core/evaluation.h"
#include "core/task.h"

#include <algorithm>
#include <cmath>
#include <limits>

namespace lathe::gate {

double t975(size_t df) {
  // Table for small df, then the normal limit with a first-order correction; accurate to
  // better than 0.5% everywhere, which is far below timing noise.
  static const double table[] = {0,     12.706, 4.303, 3.182, 2.776, 2.571, 2.447, 2.365,
                                 2.306, 2.262,  2.228, 2.201, 2.179, 2.160, 2.145, 2.131,
                                 2.120, 2.110,  2.101, 2.093, 2.086, 2.080, 2.074, 2.069,
                                 2.064, 2.060,  2.056, 2.052, 2.048, 2.045, 2.042};
  if (df == 0) return std::numeric_limits<double>::infinity();
  if (df <= 30) return table[df];
  return 1.959964 + 2.37 / static_cast<double>(df);
}

ratio_estimate estimate_ratio(const std::vector<double>& a, const std::vector<double>& b) {
  std::vector<double> logs;
  const size_t n = std::min(a.size(), b.size());
  for (size_t i = 0; i < n; ++i)
    if (a[i] > 0 && b[i] > 0) logs.push_back(std::log(b[i] / a[i]));
  ratio_estimate r;
  r.rounds = logs.size();
  if (logs.empty()) return r;
  double mean = 0;
  for (double x : logs) mean += x;
  mean /= static_cast<double>(logs.size());
  r.ratio = std::exp(mean);
  if (logs.size() < 2) {
    r.ci_low = 0;
    r.ci_high = std::numeric_limits<double>::infinity();
    r.rse = std::numeric_limits<double>::infinity();
    return r;
  }
  double ss = 0;
  for (double x : logs) ss += (x - mean) * (x - mean);
  const double sd = std::sqrt(ss / static_cast<double>(logs.size() - 1));
  r.rse = sd / std::sqrt(static_cast<double>(logs.size()));
  const double half = t975(logs.size() - 1) * r.rse;
  r.ci_low = std::exp(mean - half);
  r.ci_high = std::exp(mean + half);
  return r;
}

ratio_estimate estimate_ratio_grouped(const std::vector<double>& a, const std::vector<double>& b,
                                      const std::vector<uint8_t>& group) {
  ratio_estimate r = estimate_ratio(a, b);
  const size_t n = std::min(a.size(), b.size());
  if (group.size() < n || r.rounds < 2) return r;
  std::vector<std::vector<double>> by(256);
  for (size_t i = 0; i < n; ++i)
    if (a[i] > 0 && b[i] > 0) by[group[i]].push_back(std::log(b[i] / a[i]));
  std::vector<double> means;
  double within_ss = 0;
  size_t within_df = 0, total = 0;
  for (const auto& xs : by) {
    if (xs.empty()) continue;
    double m = 0;
    for (double x : xs) m += x;
    m /= static_cast<double>(xs.size());
    for (double x : xs) within_ss += (x - m) * (x - m);
    within_df += xs.size() - 1;
    total += xs.size();
    means.push_back(m);
  }
  const size_t k = means.size();
  if (k < 2) return r;
  double mean = 0;
  for (double m : means) mean += m;
  mean /= static_cast<double>(k);
  double ss = 0;
  for (double m : means) ss += (m - mean) * (m - mean);
  const double var_means = ss / static_cast<double>(k - 1);
  // One-way ANOVA F test of "the pairs differ": the between-pair mean square over the
  // within-pair one. Only when it is significant (95%) do the pair means carry the interval,
  // with k - 1 degrees of freedom; otherwise the rounds are exchangeable and the plain,
  // narrower interval is the right one.
  const double per_pair = static_cast<double>(total) / static_cast<double>(k);
  const double within_ms = within_df ? within_ss / static_cast<double>(within_df) : 0;
  const double f = within_ms > 0 ? per_pair * var_means / within_ms
                                 : (var_means > 0 ? INFINITY : 0);
  static const double f_crit_inf[] = {0, 3.84, 3.00, 2.60, 2.37, 2.21, 2.10, 2.01, 1.94};
  const double f_crit = f_crit_inf[std::min<size_t>(k - 1, 8)] *
                        (1 + 2.0 / std::max<double>(1.0, static_cast<double>(within_df)));
  if (!(f > f_crit)) return r;
  // Every pair weighs alike, so a pair that ran more rounds does not pull the ratio toward its
  // own process layout.
  const double se = std::sqrt(var_means / static_cast<double>(k));
  const double half = t975(k - 1) * se;
  r.ratio = std::exp(mean);
  r.rse = se;
  r.ci_low = std::exp(mean - half);
  r.ci_high = std::exp(mean + half);
  r.pairs_differ = true;
  return r;
}

bool pairs_differ(const paired_series& s) {
  return estimate_ratio_grouped(s.a_seconds, s.b_seconds, s.pair).pairs_differ;
}

double median(std::vector<double> v) {
  if (v.empty()) return 0;
  const size_t m = v.size() / 2;
  std::nth_element(v.begin(), v.begin() + m, v.end());
  double hi = v[m];
  if (v.size() % 2) return hi;
  double lo = *std::max_element(v.begin(), v.begin() + m);
  return (lo + hi) / 2;
}

double relative_mad(const std::vector<double>& v) {
  const double med = median(v);
  if (med == 0) return 0;
  std::vector<double> dev;
  dev.reserve(v.size());
  for (double x : v) dev.push_back(std::fabs(x - med));
  return median(dev) / med;
}

namespace {
// PROTOCOL.md's margin from an A/A interval: three times its reach from 1 (in log space, the
// farther side), never below `floor`.
double epsilon_of(double ci_low, double ci_high, double floor) {
  const double spread = std::max(std::fabs(std::log(ci_high)), std::fabs(std::log(ci_low)));
  return std::max(floor, std::expm1(3 * spread));
}
}  // namespace

double decision_epsilon(const ratio_estimate& aa, double floor) {
  // An interval from fewer than two rounds, or an infinite one, counts as no spread.
  if (aa.rounds < 2 || !std::isfinite(aa.ci_high) || !(aa.ci_low > 0)) return floor;
  return epsilon_of(aa.ci_low, aa.ci_high, floor);
}

double decision_floor(platform p) { return p == platform::cuda ? 0.01 : 0.05; }

decision_result decide(const paired_series& c, const paired_series* aa, const timing_policy& policy,
                       double floor) {
  decision_result d;
  d.epsilon = aa ? decision_epsilon(*aa, floor) : floor;
  const bool faster = std::isfinite(d.epsilon) && c.ci_low > 1 + d.epsilon;
  const bool slower = std::isfinite(d.epsilon) && c.ci_high > 0 && c.ci_high < 1 / (1 + d.epsilon);
  double spread = 0;
  if (aa) spread = std::max(std::fabs(aa->ci_high - 1), std::fabs(1 - aa->ci_low));
  const bool noisy = aa && (!std::isfinite(spread) || spread > policy.aa_unstable);
  d.decision = faster ? decision::faster : slower ? decision::slower : noisy ? decision::undecided : decision::same;
  if (!std::isfinite(c.ci_low) || !std::isfinite(c.ci_high) || !(c.ci_low > 0))
    d.decision = faster || slower ? d.decision : decision::undecided;
  return d;
}

double decision_epsilon(const paired_series& aa, double floor) {
  if (!(aa.ci_low > 0) || !(aa.ci_high > 0)) return floor;  // no interval recorded
  // An infinite interval (fewer than two rounds) is an infinite epsilon: nothing is decided.
  return epsilon_of(aa.ci_low, aa.ci_high, floor);
}

}  // namespace lathe::gate
