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
};

struct fast_p {
  double p = 1.0;
  double fraction = 0;  // tasks correct with speedup > p, over ALL tasks (KernelBench's definition)
  int32_t count = 0;
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
// timed) counts as correct and never as fast; it is left out of the speedup statistics.
bench_summary summarize(const std::vector<task_result>& results, const std::vector<double>& ps = {1.0, 1.5, 2.0});

}  // namespace lathe::search
