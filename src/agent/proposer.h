// The proposer interface (DESIGN.md "Two proposers", vocabulary "proposer"): what writes code.
// Everything above agent/ (lineage/, skills/, search/) asks these operations and nothing else;
// the LLM proposer (agent/llm_proposer.h) answers them through a model, the rule engine
// (agent/rules, a later issue) mechanically. A proposer never judges its own work: every kernel
// it returns goes through the gate, and every claim it makes (a feature removed, a citation) is
// checked by lathe before anything acts on it (docs/proposer.md).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <tl/expected.hpp>

#include "core/card.h"
#include "core/feature.h"
#include "core/kernel.h"
#include "core/lineage.h"
#include "core/outcome.h"
#include "core/provenance.h"
#include "core/task.h"

namespace lathe::agent {

// ---- what every code-writing operation returns ----------------------------------------------

// A kernel the proposer wrote, not yet gated.
struct proposal {
  kernel_bundle kernel;        // the edited bundle (hash recomputed, no origin)
  std::string edits;           // the applied edits in the docs/edits.md format (agent/edit.h)
  std::string action;          // action category (open vocabulary: "remove_cp_async_pipeline")
  std::string locus;           // "function" or "function/loop-path"
  std::vector<std::string> features_removed, features_added;  // registry names it claims
  std::string rationale;       // the proposer's explanation (prose; never evidence)
  provenance prov;             // llm:<provider>/<model> | rules:<rule> | replay:<cassette>
  int32_t calls = 0;           // model calls it took, repairs included (0 for rules)
};

// Why an operation produced nothing usable. Each kind is its own outcome for callers.
enum class failure_kind : uint8_t {
  call,              // the model call failed (network, timeout, auth…): `call_error` says which
  budget,            // the budget refused the call's reservation
  waiting,           // batch mode: the prompt is written out, its answer not yet there (llm/batch_dir.h)
  invalid_reply,     // the reply never matched its schema within the repair rounds
  edit_not_applied,  // the edits never applied within the repair rounds (last error in message)
  unsupported,       // this proposer cannot do this operation (rules: no seed for this task)
  refused,           // the proposer declined (nothing left to remove, no card applies)
};
const char* to_string(failure_kind k);

struct failure {
  failure_kind kind = failure_kind::invalid_reply;
  std::string message;  // for users and for the next prompt; never contains a key
  int32_t calls = 0;
};

template <class T>
using op_result = tl::expected<T, failure>;

// ---- operation requests ---------------------------------------------------------------------

// Something the proposer was told about earlier attempts: what was tried and what the gate (or
// lathe's checks) said about it, so that the next attempt does not repeat it.
struct attempt_note {
  std::string summary;   // "remove smem_tiling at gemm_kernel: wrong_result (max err 3.1 at …)"
};

// Where a search stands, for the prompts that ask for a faster kernel (v2 templates: the
// `progress` field, agent/situation_text.h). Every figure is lathe's own measurement; an absent
// one is said as such, never guessed.
struct progress_facts {
  std::optional<double> start_seconds;  // median time of the start kernel (timed shape set)
  std::optional<double> best_seconds;   // median time of the best kernel, same shape set
  double best_ratio = 1.0;              // paired: start over best (product of accepted steps)
  int32_t accepted = 0;                 // steps accepted so far
  std::optional<double> floor_seconds;  // the roofline floor of the timed shape set
  std::string roofline;                 // the floor's terms and the ceilings it is taken against
  bool floor_memory_only = false;       // the task counts no flops: the floor is bytes / bandwidth alone
  int32_t step = 0;                     // this step (1-based); 0: not a stepped search
  std::optional<int64_t> steps;         // the run's step bound
  std::string budget_left;              // "4 steps, 30 evaluations, 1620 s" ("" = unbounded)
  std::string library;                  // skills: the library's state for this kernel ("" = none)
  // The noise rule of the last timed decision (gate/paired.h decide): its margin epsilon (faster
  // means the ratio's interval clears 1 + epsilon), the floor epsilon never goes below, the A/A
  // control's interval epsilon came from (three times its reach from 1) and the reach past which
  // the machine counts as too noisy to decide. Absent: no timed decision yet (or an old record).
  std::optional<double> margin, margin_floor, aa_low, aa_high, aa_unstable;
  // How the text names things: optimize's "step", "start kernel", "best kernel"; evolve's
  // "generation", "baseline", "parent kernel".
  std::string step_name = "step", start_name = "start kernel", best_name = "best kernel";
  std::string accepted_name = "step(s) accepted so far";  // evolve: "elite(s) in the archive"
};

// KLineage backward: remove exactly one mechanism (with the adapters it needs, never half of
// one). The gate checks the predecessor compiles and is correct; the feature audit checks that
// exactly the claimed feature disappeared.
struct backward_request {
  const task* t = nullptr;
  kernel_bundle kernel;                     // the current (more optimized) kernel
  std::vector<feature> features;            // its verified features: the candidates to remove
  std::vector<std::string> action_prior;    // soft order prior: categories to prefer, in order
  std::vector<attempt_note> rejected;       // earlier rejected attempts at this step
  std::string target;                       // target summary: architecture and capabilities
};

// KLineage forward: re-apply one optimization to the predecessor without seeing the backward
// diff (the request holds no edit, no successor source).
struct forward_request {
  const task* t = nullptr;
  kernel_bundle predecessor;
  feature restore;                          // the feature to re-introduce (name, locus, params)
  std::string action;                       // the backward step's category, as a hint
  std::vector<attempt_note> rejected;
  std::string target;
};

enum class presence : uint8_t { present, absent, unknown };
const char* to_string(presence p);

// A citation: lines [first, last] (1-based, inclusive) of one bundle file.
struct citation {
  std::string file;
  int32_t first = 0, last = 0;
};

struct feature_verdict {
  std::string name;                   // registry name asked about
  presence status = presence::unknown;
  std::string locus;
  std::vector<citation> citations;    // verified: in range, bounded, code not comments
  std::string note;                   // the proposer's words, or why lathe demoted the verdict
};

struct audit_request {
  const task* t = nullptr;
  kernel_bundle kernel;
  std::vector<std::string> features;  // registry names to decide
  std::string target;
};

struct audit_result {
  std::vector<feature_verdict> verdicts;  // one per asked name, in the asked order
  // Verdicts lathe demoted to `unknown` because a citation failed verification (out of range,
  // too long, only comments or blank lines): the reason per name. Comments are not evidence.
  std::vector<std::string> demoted;
  bool passed() const;                    // no verdict is unknown ("unknown fails")
  int32_t calls = 0;
  provenance prov;
};

// Lift one verified step into a card: one mechanism with its necessary adapters; tuning values
// stay in the carrier and the evidence, not in the intent.
struct card_request {
  const task* t = nullptr;
  transition step;                  // action, locus, edit (the diff), features, measured effect
  kernel_bundle before, after;      // the two kernels of the step (before = less optimized)
  std::string target;               // where it was measured ("sm_90a", "x86-64-v3")
};

// Apply one card or a planned combination (in order) to a kernel.
struct materialize_request {
  const task* t = nullptr;
  kernel_bundle kernel;
  std::vector<feature> features;    // the kernel's verified features
  std::vector<skill_card> cards;    // one card, or a plan applied in this order
  std::string target;               // target summary: architecture and capabilities
  std::vector<attempt_note> rejected;
  progress_facts progress;
};

// Fix a kernel the gate refused, with the gate's diagnostics.
struct repair_request {
  const task* t = nullptr;
  kernel_bundle failed;             // the kernel that failed
  std::string goal;                 // what the failed attempt was trying to do
  outcome verdict = outcome::wrong_result;
  std::string diagnostics;          // the gate's messages (compile log, first mismatches…)
  std::string target;
};

// A first kernel for a task from its reference.
struct seed_request {
  const task* t = nullptr;
  std::string reference_source;     // the task's reference (CPU reference for CPU tasks)
  std::vector<std::string> entry_features;  // features the seed should already have
  std::string target;
};

struct path_option {
  std::string id;                   // a retrieved path's id (cards in order)
  std::string summary;              // what it does, its cards' intents
  std::string evidence;             // v2 prompts: its cards' measured effects (card_evidence_text)
};

struct rank_request {
  const task* t = nullptr;
  kernel_bundle kernel;
  std::vector<feature> features;
  std::vector<path_option> paths;
  std::string target;
  progress_facts progress;
};

struct ranking {
  std::vector<std::string> order;   // every given id exactly once, best first
  std::vector<std::string> reasons; // one per id in `order`
  int32_t calls = 0;
  provenance prov;
};

// Kernel-Smith evolution: one mutation of a parent, optionally inspired by others.
struct mutate_request {
  const task* t = nullptr;
  kernel_bundle parent;
  std::vector<kernel_bundle> inspirations;  // other archive elites (may be empty)
  std::string direction;            // what to try for (a descriptor cell, a profile's hint)
  std::vector<attempt_note> rejected;
  std::string target;
  progress_facts progress;
};

// ---- the interface --------------------------------------------------------------------------

class proposer {
 public:
  virtual ~proposer() = default;
  // Provenance of everything this proposer returns ("llm:openai/gpt-4.1", "rules:catalog").
  virtual provenance origin() const = 0;

  virtual op_result<proposal> propose_backward(const backward_request& r) = 0;
  virtual op_result<proposal> rederive_forward(const forward_request& r) = 0;
  virtual op_result<audit_result> audit_features(const audit_request& r) = 0;
  virtual op_result<skill_card> abstract_card(const card_request& r) = 0;
  virtual op_result<proposal> materialize(const materialize_request& r) = 0;
  virtual op_result<proposal> repair(const repair_request& r) = 0;
  virtual op_result<proposal> seed_baseline(const seed_request& r) = 0;
  virtual op_result<ranking> rank_paths(const rank_request& r) = 0;
  virtual op_result<proposal> mutate(const mutate_request& r) = 0;

  // True when calls may be made from several threads at once (evolve asks a batch's children
  // together). An answer must depend on its own request only; a proposer that keeps per-call
  // state says false (the default).
  virtual bool concurrent() const { return false; }
};

}  // namespace lathe::agent
