// The aggregates `lathe bench` reports over a suite (issue 8, item 2; docs/bench.md defines each
// one). Pure arithmetic over per-task results, so that every figure is reproducible from the
// stored rows and tested on hand-computed cases.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace lathe::search {

enum class task_status : uint8_t {
  correct,       // the candidate passed the gate: its speedup is a figure
  failed,        // the candidate failed the gate (outcome says how)
  no_candidate,  // nothing was submitted for the task: reported as such, never as a figure
};
const char* to_string(task_status s);

struct task_result {
  std::string task;
  task_status status = task_status::no_candidate;
  std::string outcome;            // the gate's outcome ("ok", "wrong_result", …); empty without one
  std::optional<double> speedup;  // paired ratio baseline time / candidate time (correct only)
  // The paired ratio's 95% interval (the gate's series; none for a ratio of means).
  std::optional<double> ci_low, ci_high;
};

// Whether a task counts as faster than `p`: correct, and the gain decided, the paired interval's
// low end above p. A point estimate above p is not enough: a 1.045x with interval [0.94, 1.16]
// was counted as fast_1.0 on the 2-core VM, where the same pair of identical kernels reads
// 0.978-1.023 (PROTOCOL.md). A ratio without an interval (a ratio of means) is never decided.
bool decided_faster(const task_result& r, double p);

struct fast_p {
  double p = 1.0;
  // Tasks correct whose gain over p is decided (decided_faster), over ALL tasks (KernelBench's
  // denominator).
  double fraction = 0;
  int32_t count = 0;
  // Tasks whose point estimate alone is above p (KernelBench's own rule, for comparison): the
  // difference with `count` is gains the interval leaves undecided.
  int32_t count_point = 0;
};

struct bench_summary {
  int32_t tasks = 0, correct = 0, failed = 0, no_candidate = 0;
  double correctness_rate = 0;          // correct / tasks
  std::vector<fast_p> fast;             // one per asked p, in the asked order
  // Over the correct tasks only (none when no task is correct).
  std::optional<double> geomean, mean, median;
  // Mean over ALL tasks of the speedup, a failed or missing candidate counting as 0.
  double mean_with_failures_as_zero = 0;
};

// `ps`: the thresholds of fast_p (default 1.0, 1.5, 2.0). A correct result without a speedup (not
// timed) counts as correct and never as fast; it is left out of the speedup statistics. The
// speedup statistics take every correct task's point estimate, decided or not.
bench_summary summarize(const std::vector<task_result>& results, const std::vector<double>& ps = {1.0, 1.5, 2.0});

}  // namespace lathe::search
