// lathe optimize (issue 7; docs/optimize.md): from a start kernel, find the best verified kernel
// within a budget, in one persistent, resumable run.
//
// The loop, once per step: inspect the current best (its verified features, the last
// evaluation's roofline position and resource report, a profile where the caller provides one)
// -> the strategy's request (strategy.h: cards retrieved from the features and ranked by the
// proposer, or a mutation with the strategy's memory) -> the proposer writes a candidate -> the
// gate times it against the best in a paired series -> on a gate failure, bounded repair rounds
// with the gate's diagnostics -> a candidate the gate decides faster (the paired ratio's interval
// clears 1 + margin: PROTOCOL.md's rule, the one `lathe eval` prints) is re-measured against the
// best in a fresh evaluation, and replaces it only if the gate decides it faster again.
//
// Budget (llm/budget.h): every step reserves one step and its expected seconds, every gate
// evaluation one evaluation, every model call its tokens and money (through the metered
// provider), each before it starts; the final measurements are reserved when the run starts.
// The summary names the limit that ended the run.
//
// Persistence: every proposal and every evaluation is a run event the moment it exists, with
// what it used. `resume_run` replays the events through the same loop: recorded proposals and
// verdicts are taken from the events (no model call, no gate evaluation repeated), so under
// recorded verdicts a resumed run ends exactly as an uninterrupted one; under real timing its
// best is the one accepted before the kill, or better.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "agent/proposer.h"
#include "core/error.h"
#include "core/kernel.h"
#include "core/lineage.h"
#include "core/outcome.h"
#include "core/run.h"
#include "core/target.h"
#include "core/task.h"
#include "llm/budget.h"
#include "search/strategy.h"
#include "core/decision.h"
#include "search/stop.h"
#include "store/store.h"
#include "verify/verifier.h"

namespace lathe::search {


// What a progress callback sees after each stored event.
struct optimize_progress {
  std::string run_id, kind;     // the event's kind ("accepted", "rejected", …)
  int32_t step = 0;
  std::string message;          // one line for people
  double best_ratio = 1.0;      // product of the accepted steps' re-measured ratios (vs start)
  llm::amounts used;            // budget used so far (seconds: elapsed)
  llm::limits limits;
  std::optional<double> eta_seconds;  // until the first limit, at the pace so far
};

struct optimize_options {
  strategy strat = strategy::skills;
  ablation abl;
  // Repair rounds after a gate failure, each one a proposer call and a gate evaluation.
  int32_t max_repairs = 1;
  // A timed comparison the gate answers `unstable` (too noisy to decide) is asked again this many
  // times; each try is a gate evaluation.
  int32_t unstable_retries = 1;
  // Steps in a row without an accepted one that end the run (0: no such limit).
  int32_t max_stall = 0;
  // The skills strategy, once no retrieved card is left to try on the best: go on with free
  // mutations (labelled `free`), or end the run as exhausted.
  bool free_after_cards = true;
  // Measure the task's expert against the start kernel at the end (the gap recovered).
  bool measure_expert = true;
  std::string target_text;     // the proposer's target summary
  target tgt;                  // retrieval's target (capabilities, architecture)
  std::optional<std::string> resume_run;
  std::string run_id;          // the new run's id (empty: new_run_id())
  std::string args_json;       // the verb's arguments, stored with the run (what --resume reads)
  std::string proposer_label;  // stored in the summary beside every figure
  // Extra inspection text for the best kernel (an Nsight Compute summary on CUDA); may be empty.
  std::function<std::string(const task&, const kernel_bundle&)> inspect;
  std::function<void(const optimize_progress&)> progress;
};

// The kernels a run works with; the CLI loads them from the task's directory.
struct optimize_kernels {
  std::optional<kernel_bundle> start;   // the start kernel; none: the proposer seeds one
  std::optional<kernel_bundle> naive;   // used when the proposer cannot seed (the rule engine)
  std::optional<kernel_bundle> expert;  // the task's expert, for the gap recovered
};

// One accepted step of the run's lineage (start = K0 -> … -> best).
struct optimize_step {
  int32_t step = 0;
  transition tr;                 // from/to hashes, action, locus, edit, features, speedup
                                 // (re-measured), evaluations, provenance
  std::string source;            // "card:<name>", "plan:<n1>+<n2>", "free", "memory", "expert-source"
  std::vector<std::string> cards;  // card ids given to the proposer
  double first_ratio = 0;        // the first paired ratio (before the re-measure)
};

// How an optimize run got its start kernel.
enum class start_how : uint8_t {
  given,   // --start (or the task's start kernel)
  seeded,  // the proposer's translation of the reference, passed the gate (repaired if need be)
  naive,   // the task's naive kernel: the proposer could not seed
};
const char* to_string(start_how h);
// The start event's and the summary's `how`: "given", "seeded", "naive (<why>)".
std::string start_text(start_how h, const std::string& naive_because);

struct optimize_result {
  run r;                               // finished, its summary JSON set
  kernel_bundle start, best;
  search::start_how how = search::start_how::given;  // how the start kernel came
  std::string naive_because;           // naive: why the proposer did not seed it
  std::vector<optimize_step> steps;
  int32_t proposals = 0, rejected = 0;
  int64_t evaluations = 0;             // gate evaluations (the start check and final ones included)
  stop_reason stop = stop_reason::exhausted;
  std::string stop_detail;
  // The final measurements (fresh paired series, taken after the loop).
  std::optional<double> best_vs_start;    // none when no step was accepted, or the final series
                                          // did not decide (final_best_outcome says why)
  std::optional<lathe::outcome> final_best_outcome;  // that series' outcome when it was not ok (unstable)
  std::optional<double> expert_vs_start;  // when the task has an expert and it was measured
  std::optional<double> gap_recovered;    // log(best_vs_start) / log(expert_vs_start)
  std::vector<int64_t> final_evaluations;
  llm::amounts used;
  bool resumed = false;
  std::string best_dir;                // where the best bundle was written (when it was)
};

// Runs (or resumes) an optimize run. `ledger` holds the run's limits and is the one the proposer's
// model calls are metered against; on resume it must have been made with `already_spent`'s seconds
// (resume_seconds). Errors: a start kernel that fails the gate, a seed that could not be made and
// no naive kernel, a resume_run that does not exist or is another kind or task, the store.
result<optimize_result> optimize(const task& t, const optimize_kernels& kernels, lineages::verifier& v,
                                 agent::proposer& p, store& db, llm::ledger& ledger,
                                 const optimize_options& o);

// The wall time a run had used when it was stopped (its last event's), for the resumed ledger.
result<double> resume_seconds(store& db, const std::string& run_id);

// "optimize-YYYYMMDD-HHMMSS-xxxx".
std::string new_run_id();

// A paired ratio as a proposer should read it, by the point ratio against the margin it had to
// clear (1 + margin) — how runs decided before the gate's decision was kept in their records:
// "1.120x: faster (clears 1 + 0.050)", "1.030x: read faster, but inside the noise margin (1 +
// 0.050): undecided, not slower", "0.990x: the same within the noise margin (1 + 0.050)",
// "0.800x: slower (below 1 / (1 + 0.050))". A re-measure that read faster inside the noise is
// not a verdict that the kernel is not faster (issue 23).
std::string speed_reading(double ratio, double margin);
// The same by the gate's decision on the ratio's interval [ci_low, ci_high] (the rule since issue
// 43, step 10): "1.120x [1.080, 1.160]: faster (the interval clears 1 + 0.050)", "1.080x [1.020,
// 1.140]: read faster, but the interval reaches below 1 + 0.050: undecided, not slower",
// "0.990x [0.950, 1.030]: the same within the noise margin (1 + 0.050)", "0.800x [0.780, 0.820]:
// slower (the interval lies below 1 / (1 + 0.050))", and "…: undecided: the machine's noise
// leaves it open" when the gate could not tell.
std::string speed_reading(double ratio, double margin, decision d, double ci_low, double ci_high);

}  // namespace lathe::search
