#include "gate/paired.h"

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

double decision_epsilon(const ratio_estimate& aa, double floor) {
  // The A/A spread: how far from 1 the identical-kernel interval reaches.
  double spread = 0;
  if (aa.rounds >= 2 && std::isfinite(aa.ci_high) && aa.ci_low > 0)
    spread = std::max(std::fabs(std::log(aa.ci_high)), std::fabs(std::log(aa.ci_low)));
  return std::max(floor, std::expm1(3 * spread));
}

}  // namespace lathe::gate
