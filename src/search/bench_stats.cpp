#include "search/bench_stats.h"

#include <algorithm>
#include <cmath>

namespace lathe::search {

const char* to_string(task_status s) {
  switch (s) {
    case task_status::correct: return "correct";
    case task_status::failed: return "failed";
    case task_status::no_candidate: return "no_candidate";
  }
  return "?";
}

bool decided_faster(const task_result& r, double p) {
  return r.status == task_status::correct && r.speedup && *r.speedup > p && r.ci_low && *r.ci_low > p;
}

bench_summary summarize(const std::vector<task_result>& results, const std::vector<double>& ps) {
  bench_summary s;
  s.tasks = static_cast<int32_t>(results.size());
  std::vector<double> speedups;
  double sum_all = 0;
  for (const auto& r : results) {
    switch (r.status) {
      case task_status::correct: ++s.correct; break;
      case task_status::failed: ++s.failed; break;
      case task_status::no_candidate: ++s.no_candidate; break;
    }
    if (r.status == task_status::correct && r.speedup && *r.speedup > 0) {
      speedups.push_back(*r.speedup);
      sum_all += *r.speedup;
    }
  }
  if (s.tasks > 0) {
    s.correctness_rate = static_cast<double>(s.correct) / s.tasks;
    s.mean_with_failures_as_zero = sum_all / s.tasks;
  }
  for (double p : ps) {
    fast_p f;
    f.p = p;
    for (const auto& r : results) {
      if (decided_faster(r, p)) ++f.count;
      if (r.status == task_status::correct && r.speedup && *r.speedup > p) ++f.count_point;
    }
    f.fraction = s.tasks > 0 ? static_cast<double>(f.count) / s.tasks : 0;
    s.fast.push_back(f);
  }
  if (!speedups.empty()) {
    double log_sum = 0, sum = 0;
    for (double x : speedups) {
      log_sum += std::log(x);
      sum += x;
    }
    const double n = static_cast<double>(speedups.size());
    s.geomean = std::exp(log_sum / n);
    s.mean = sum / n;
    std::sort(speedups.begin(), speedups.end());
    const size_t m = speedups.size() / 2;
    s.median = speedups.size() % 2 ? speedups[m] : 0.5 * (speedups[m - 1] + speedups[m]);
  }
  return s;
}

}  // namespace lathe::search
