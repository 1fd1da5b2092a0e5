// lathe evolve (issue 9; docs/evolve.md): Kernel-Smith's evolutionary search on lathe's gate.
//
// Islands of a MAP-Elites archive (archive.h) start from the start kernel (gated against the
// task's baseline) and `population - 1` mutations of it per island. Each generation, each island
// makes `children` children: a parent and inspirations sampled by the ratios, a mutate request
// with the parent's execution feedback (its last verdict, error figures, timing, resources), the
// reference's source, the target and, when library-guided, the skill cards retrieved for the
// parent's verified features; the gate scores the child against the baseline (checks first: a
// child that does not compile or is wrong is scored without timing); the child is placed: an
// empty cell takes it, an occupied cell whose elite scores lower is contested by a paired
// re-measure of the child against the incumbent in fresh worker processes, and the child
// replaces the elite only if it is faster by the gate's margin. Every `migrate_every`
// generations, each island's best migrates to the next island under the same rule.
//
// Persistence: one `child` event per child (its proposal, verdict, placement and contest) the
// moment it is decided, a `generation` event per generation (the best score so far); `--resume`
// replays the recorded children through the same loop (same seed, same sampling) and goes on live.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "agent/proposer.h"
#include "core/card.h"
#include "core/error.h"
#include "core/feature.h"
#include "core/kernel.h"
#include "core/outcome.h"
#include "core/provenance.h"
#include "core/run.h"
#include "core/task.h"
#include "llm/budget.h"
#include "search/archive.h"
#include "store/store.h"
#include "verify/verifier.h"

namespace lathe::search {

struct evolve_progress {
  std::string run_id;
  int32_t generation = 0, island = 0, child = 0;
  std::string message;
  double best_score = 0;
  int64_t evaluations = 0;
  double seconds = 0;
};

// How a child is first timed against the baseline (`lathe evolve --child-timing`).
enum class child_timing : uint8_t {
  full,   // as the main verifier times
  quick,  // half the effort, wider intervals (the gate's quick settings)
};
const char* to_string(child_timing t);

struct evolve_options {
  int32_t generations = 3;
  int32_t islands = 2;
  int32_t population = 2;     // initial members per island: the start kernel and mutations of it
  int32_t children = 2;       // children per island per generation
  int32_t migrate_every = 2;  // generations between migrations (0: never)
  std::vector<descriptor> descriptors;
  sampling samp;
  uint64_t seed = 1;          // the sampling's random stream (stored with the run)
  // Children proposed, then gated together, per batch: their builds and checks overlap, timing
  // is serialized by the device lock. 1: one child at a time. A batch's parents are sampled
  // before any of its children is placed, so the value is part of the run (a resume keeps it).
  int32_t in_flight = 1;
  // The gate's cascade (issue 9): the verifier that times a child against the baseline, the
  // first and cheap measure of it (`lathe evolve --child-timing quick`); the start kernel and
  // every contest for an elite's cell (the paired re-measure that replaces an elite) are timed
  // by the main verifier. Null: the main verifier times everything.
  lineages::verifier* screen = nullptr;
  child_timing screen_timing = child_timing::full;  // how `screen` times, for the summary
  // Library-guided evolution: the cards retrieved for a parent, shown in its mutate request.
  std::function<std::vector<skill_card>(const task&, const std::vector<feature>&)> cards;
  std::string reference_source;  // shown to the proposer
  std::string target_text;
  std::string proposer_label;
  std::optional<std::string> resume_run;
  std::string run_id;
  std::string args_json;
  std::function<void(const evolve_progress&)> progress;
};

// How a child came to be; stored as to_string's word (a record with another word is refused).
enum class child_kind : uint8_t {
  initial,      // a mutation of the start kernel, in the initial population
  child,        // a mutation of a sampled parent, in a generation
  migrant,      // an island's best, moved to the next island (not proposed, not gated again)
  translation,  // the proposer's translation of the reference (no start kernel)
};
const char* to_string(child_kind k);

// One child as the run records it (and as `lathe export training` reads it back).
struct child_record {
  int32_t generation = 0, island = 0, index = 0;
  child_kind kind = child_kind::child;
  std::string parent;           // parent hash
  std::vector<std::string> inspirations;  // hashes shown with the parent
  std::vector<std::string> cards;         // card ids shown (library-guided)
  std::string kernel;           // the child's hash ("" when the proposer failed)
  std::string action, edits, rationale;
  provenance prov;
  std::string failure;          // the proposer's failure, if any
  // The gate's outcome of the child against the baseline; none when the proposer failed (stored
  // as "", outcome_text).
  std::optional<lathe::outcome> outcome;
  std::optional<double> speedup;         // over the baseline (correct, decided)
  std::optional<double> parent_speedup;  // the parent's, when known
  double score = 0;
  search::placement placement = search::placement::kept;
  std::optional<double> contest_ratio;   // child vs incumbent, the re-measure
  bool placed = false;
  bool duplicate = false;       // a kernel the run had gated before: its verdict reused
  std::vector<int64_t> evaluations;
  std::string prompt_context;   // what the mutate request held besides the kernels (direction)
};

struct evolve_result {
  run r;
  std::vector<child_record> children;
  std::vector<double> best_per_generation;  // the best score over all islands after each
  int64_t evaluations = 0;
  std::string best;                          // hash of the best elite
  std::optional<double> best_speedup;
  size_t archive_size = 0;
  bool resumed = false;
  // Batch mode: the run stopped with prompts written out that wait for their answers (a
  // generation's, every island's); it is interrupted, and `--gate-batch` resumes it.
  bool waiting = false;
};

// Runs (or resumes) an evolve run from `start` (which must pass the gate) against `baseline`.
// `ledger` bounds it (evals, tokens, usd, time) like optimize's. Errors: a start kernel that
// fails, a resume_run of another kind or task, the store.
result<evolve_result> evolve(const task& t, const kernel_bundle& start, const kernel_bundle& baseline,
                             lineages::verifier& v, agent::proposer& p, store& db, llm::ledger& ledger,
                             const evolve_options& o);

// "evolve-YYYYMMDD-HHMMSS-xxxx".
std::string new_evolve_id();

// A child record as JSON (the `child` event's body) and back.
nlohmann::json child_json(const child_record& c);
child_record child_from(const nlohmann::json& j);

}  // namespace lathe::search
