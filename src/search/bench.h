// lathe bench SUITE --candidates DIR (issue 8, item 2; docs/bench.md): every task of a suite gated
// with its candidate against the task's baseline, one persistent run (kind bench) whose events are
// the per-task results, and the suite aggregates (bench_stats.h). A task without a candidate is
// `no_candidate`; a task this machine cannot run (a CUDA task without a GPU) is left out and
// listed as skipped, never counted.
#pragma once

#include <functional>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "core/error.h"
#include "core/kernel.h"
#include "core/outcome.h"
#include "core/run.h"
#include "core/task.h"
#include "search/bench_stats.h"
#include "store/store.h"
#include "verify/verifier.h"

namespace lathe::search {

struct bench_entry {
  task t;
  std::optional<kernel_bundle> candidate;  // none: no candidate for this task (--candidates)
  kernel_bundle baseline;                  // the task's baseline kernel
};

// How a suite is measured (docs/bench.md "Protocols").
enum class bench_protocol : uint8_t {
  lathe,     // one candidate per task, one paired series against the baseline (decision mode)
  klineage,  // KLineage's Appendix D: `runs` independent runs per task; each run's kernel checked
             // on 3 seeds and timed do_bench-style, the baseline likewise in the same run; the
             // success-only geometric mean with the failure count, source and held-out apart
};
const char* to_string(bench_protocol p);

// One attempt at a task: the candidate a producer made (given, or optimized from the baseline).
struct bench_attempt {
  std::optional<kernel_bundle> candidate;  // none (and no failure): no candidate
  std::string failure;                     // producing one failed (the optimize run said why)
  std::string run;                         // the optimize run that made it, if one did
  // Set when the producer measured it already (optimize: the final paired best vs start, start
  // being the task's baseline); the lathe protocol then takes it instead of timing again.
  std::optional<double> speedup;
  std::optional<lathe::outcome> outcome;  // the producer's measure's, or its failure's (forbidden)
  std::string message;
  int64_t evaluation = 0;
};
using bench_producer = std::function<bench_attempt(const bench_entry&, int32_t attempt)>;

// The given candidates: entry.candidate, whatever the attempt.
bench_producer given_candidates();

// A do_bench-style measure of one kernel on a task (gate mode do_bench, 3 seeds checked first).
struct bench_timing {
  std::optional<double> mean_seconds;  // none: the kernel failed (outcome says how)
  std::optional<lathe::outcome> outcome;
  std::string message;
  int64_t evaluation = 0;
};
// `is_baseline`: the kernel is the task's own baseline, trusted (never screened as a candidate:
// a library baseline links the vendor library it stands for).
using bench_timer = std::function<bench_timing(const task&, const kernel_bundle&, bool is_baseline)>;

struct bench_row {
  task_result result;
  std::string message;        // the gate's first line
  int64_t evaluation = 0;     // its id (0: none)
  std::string candidate_hash;
  std::string run;            // the optimize run behind the candidate (--strategy)
  int32_t attempt = 0;        // klineage: which of the task's runs
  std::string role;           // the task's role (klineage keeps them apart)
};

// KLineage's report for one group of tasks (source or held-out): over every run of every task.
struct klineage_group {
  std::string role;
  int32_t tasks = 0, runs = 0, successes = 0, failures = 0;
  std::optional<double> geomean;  // over successful runs only; none without one
};

struct bench_options {
  std::string suite;          // as named on the command line
  std::string candidates;     // where the candidates came from ("optimize --strategy S …" too)
  std::vector<std::string> skipped;  // "task: why", listed in the summary
  std::vector<double> ps = {1.0, 1.5, 2.0};
  bench_protocol protocol = bench_protocol::lathe;
  int32_t runs = 1;           // klineage: independent runs per task
  // `unstable` (the machine too noisy to decide) is asked again this many times; a candidate
  // still undecided is correct (its checks passed) without a speedup: never fast, out of the
  // speedup statistics, its outcome `unstable`.
  int32_t unstable_retries = 2;
  // Correctness only (KernelBench's first pass): each candidate checked, never timed; a correct
  // one has no speedup (never fast).
  bool check_only = false;
  // Lathe protocol, given candidates: this many evaluations at once (their builds, checks and
  // inputs overlap; timing on a device stays one at a time, under its lock). Rows, events and
  // `progress` keep the entries' order whatever finishes first.
  int32_t in_flight = 1;
  // With in_flight > 1: one verifier per evaluation at once (entry i gates through lanes[i %
  // in_flight]), each on a store connection of its own: a connection takes one transaction at a
  // time, and this thread writes the run's events through `db` meanwhile. At least in_flight.
  std::vector<lineages::verifier*> lanes;
  std::string run_id;         // empty: new_run_id(run_kind::bench)
  std::function<void(const bench_row&)> progress;
};

struct bench_result {
  run r;
  std::vector<bench_row> rows;
  bench_summary summary;                 // lathe protocol: one row per task
  std::vector<klineage_group> groups;    // klineage protocol
};

// Lathe protocol: each entry's candidate (from `produce`) gated against its baseline (timed,
// paired) unless the producer measured it; a `task` event per task the moment it is decided,
// and the run with its summary (lathe.bench/1's body).
result<bench_result> run_bench(const std::vector<bench_entry>& entries, const bench_producer& produce,
                               lineages::verifier& v, store& db, const bench_options& o);

// KLineage protocol: o.runs attempts per entry, each timed with `time` beside the baseline.
result<bench_result> run_bench_klineage(const std::vector<bench_entry>& entries, const bench_producer& produce,
                                        const bench_timer& time, store& db, const bench_options& o);

// The success-only geometric mean per role over a klineage run's rows (pure; tested).
std::vector<klineage_group> klineage_groups(const std::vector<bench_row>& rows);

// The aggregates as lathe.bench/1 writes them (tasks, correct, fast_p, geomean…).
nlohmann::json summary_json(const bench_summary& s);

// The summary as Markdown: one row per task, then the aggregates (docs/bench.md).
std::string bench_markdown(const bench_result& r, const bench_options& o);

}  // namespace lathe::search
