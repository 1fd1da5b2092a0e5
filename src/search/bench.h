// lathe bench SUITE --candidates DIR (issue 8, item 2; docs/bench.md): every task of a suite gated
// with its candidate against the task's baseline, one persistent run (kind bench) whose events are
// the per-task results, and the suite aggregates (bench_stats.h). A task without a candidate is
// `no_candidate`; a task this machine cannot run (a CUDA task without a GPU) is left out and
// listed as skipped, never counted.
#pragma once

#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "core/error.h"
#include "core/feature.h"
#include "core/kernel.h"
#include "core/task.h"
#include "lineage/verifier.h"
#include "search/bench_stats.h"
#include "store/store.h"

namespace lathe::search {

struct bench_entry {
  task t;
  std::optional<kernel_bundle> candidate;  // none: no candidate for this task
  kernel_bundle baseline;                  // the task's baseline kernel
};

struct bench_row {
  task_result result;
  std::string message;        // the gate's first line
  int64_t evaluation = 0;     // its id (0: none)
  std::string candidate_hash;
};

struct bench_options {
  std::string suite;          // as named on the command line
  std::string candidates;     // where the candidates came from
  std::vector<std::string> skipped;  // "task: why", listed in the summary
  std::vector<double> ps = {1.0, 1.5, 2.0};
  // `unstable` (the machine too noisy to decide) is asked again this many times; a candidate
  // still undecided is correct (its checks passed) without a speedup: never fast, out of the
  // speedup statistics, its outcome `unstable`.
  int32_t unstable_retries = 2;
  std::string run_id;         // empty: new_run_id(run_kind::bench)
  std::function<void(const bench_row&)> progress;
};

struct bench_result {
  run r;
  std::vector<bench_row> rows;
  bench_summary summary;
};

// Gates each entry's candidate against its baseline (timed, paired), stores a `task` event per
// task the moment it is decided, and the run with its summary (lathe.bench/1's body).
result<bench_result> run_bench(const std::vector<bench_entry>& entries, lineages::verifier& v, store& db,
                               const bench_options& o);

// The summary as Markdown: one row per task, then the aggregates (docs/bench.md).
std::string bench_markdown(const bench_result& r, const bench_options& o);

}  // namespace lathe::search
