// Vocabulary types of the lineage side of lathe (DESIGN.md). They are defined here, in core/, so
// that skills/ reads lineages through store/ without depending on lineage/. Later issues fill
// them with behaviour; the shapes and their JSON are contracts now.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace lathe {

// How a detection was made.
enum class detection_method : uint8_t { source, ptx, sass, disassembly, proposer_audit };

struct feature {
  std::string locus;  // "function" or "function/loop-path" ("gemm_kernel/k")
  std::string name;   // from the feature registry ("smem_tiling", "simd"…)
  std::map<std::string, std::string> params;  // width, stages…
  detection_method method = detection_method::source;
};

// Provenance: who produced a piece of work. Kind + detail, rendered "llm:openai/gpt-x",
// "rules:unroll", "replay:cassette", "human"; `mechanical` marks a byte-identical forward step.
struct provenance {
  std::string kind;    // llm | rules | replay | human
  std::string detail;  // provider/model, rule name, cassette
  bool mechanical = false;
};
std::string to_string(const provenance& p);

enum class termination : uint8_t { complete, step_limit, rejection_limit, unknown };

// KLineage forward re-derivation of one accepted backward step (lineage/forward.h): an
// independent proposer call re-applies the optimization to the predecessor without seeing the
// backward diff. `identity_roundtrip`: the result is byte for byte the successor, so the step is
// proven plumbing (provenance mechanical), not re-derived knowledge.
// undecided: the re-derivation passed the gate, but the machine's noise (an A/A margin past 25%,
// timed twice) could not tell whether it is as fast as its successor.
enum class forward_status : uint8_t { not_tried, accepted, rejected, identity_roundtrip, undecided };

struct forward_result {
  forward_status status = forward_status::not_tried;
  std::string kernel;                // hash of the re-derived kernel (empty: none was written)
  std::optional<double> ratio;       // paired: successor time / re-derived time (>= 1 - noise)
  std::vector<int64_t> evaluations;  // gate evidence
  provenance prov;
  std::string reason;                // why it was accepted or rejected, in words
};

// One step K(i) -> K(i+1) in the optimizing direction (found backward: the walk removes a
// mechanism from K(i+1) and gets K(i)).
struct transition {
  std::string from_kernel, to_kernel;  // kernel hashes (from = less optimized)
  std::string action;                  // action category
  std::string locus;
  std::string edit;                    // the backward edit as applied (docs/edits.md text)
  std::string invocation;              // rules: the forward rule invocation (the carrier); else empty
  std::vector<feature> removed, added; // in the optimizing direction: what `to` has that `from` lacks = added
  std::optional<double> speedup;       // measured paired ratio: time(from) / time(to)
  std::vector<int64_t> evaluations;    // gate evidence (evaluation ids)
  std::vector<std::string> rejected;   // rejected attempts at this step (summaries)
  provenance prov;                     // who wrote the backward step
  forward_result forward;
};

struct lineage {
  std::string id;                    // "<task>/<expert hash prefix>/<run id>"
  std::string task;
  std::string op;                    // the task's operator family
  std::string expert;                // the expert's kernel name
  std::string target;                // architecture it was measured on ("x86-64-v3", "sm_90a")
  std::string run_id;                // the decompose run that built it
  std::vector<std::string> kernels;  // naive = K0 … Kn = expert (hashes)
  std::vector<std::vector<feature>> features;  // verified features of each kernel, same order
  std::vector<transition> steps;     // steps[i]: kernels[i] -> kernels[i+1]
  termination term = termination::unknown;
  std::string reason;
  std::vector<std::string> remaining_features;  // features of K0 the walk could not remove
};

// A checkable precondition. `what` is one of the kinds below; `value` has that kind's grammar:
//   capability    a target capability name            "wgmma", "avx2", "cp.async"
//   smem_bytes    minimum shared memory per block      "49152"
//   dtype         a dtype every floating tensor has    "f32"
//   alignment     bytes every tensor is aligned to     "16"
//   divisibility  SYMBOL%K: every shape set's SYMBOL   "N%4"
//   isa           architecture the target must reach   "x86-64-v3", "sm_90"
struct constraint {
  std::string what;
  std::string value;
};

// One trial of a card on a kernel (admission, or use by optimize): it lands in the card's
// verification log whatever its result.
enum class trial_verdict : uint8_t {
  reproduced,      // gate passed and the declared effect was reproduced
  not_reproduced,  // gate passed; effect below what the card declares
  gate_failed,     // the applied card failed the gate (outcome says how)
  not_applicable,  // a constraint failed or the proposer could not apply it (reason says which)
};

struct card_trial {
  std::string task;                   // the held-out task
  std::string kernel_before, kernel_after;  // hashes (after empty: nothing was written)
  std::string outcome;                // the gate's outcome ("ok", "wrong_result"…), empty if not gated
  std::optional<double> ratio;        // paired: time(before) / time(after)
  std::vector<int64_t> evaluations;
  trial_verdict verdict = trial_verdict::not_applicable;
  std::string reason;
  provenance prov;                    // who applied the card (rules:<rule> = replay)
  std::string created_at;
};

enum class card_status : uint8_t {
  candidate,        // induced, not yet tried on held-out tasks
  admitted,         // reproduced on >= 2 held-out tasks by a model-written application
  replay_admitted,  // admitted, but every reproducing trial was a rule replay (mechanical)
  refused,          // tried and not admitted (status_reason says why)
};

struct skill_card {
  std::string id;          // stable content id (induction: hash of its group key)
  std::string name;        // kebab-case, <= 64 characters, unique in the library
  std::string intent;
  std::string anchor;
  std::string action;      // action category of its transitions
  std::string op;          // operator family of its source task(s)
  std::map<std::string, std::string> carriers;  // "<language>/<platform>" or "rules" -> carrier
  std::vector<std::string> preconditions;       // prose
  std::vector<constraint> constraints;          // checkable preconditions
  std::string effect, risk, scope;
  std::optional<double> declared_ratio;         // the effect it claims (geomean of its evidence)
  std::vector<int64_t> evidence;                // evaluation ids
  std::vector<std::string> verification_log;    // notes (abstraction, induction)
  std::vector<card_trial> trials;               // every trial on a held-out kernel
  std::vector<std::string> requires_features, provides_features, conflicts_features;
  std::vector<std::string> sources;             // "<lineage id>#<step>" it was induced from
  std::vector<std::string> source_tasks;
  std::string target;                           // where its evidence was measured
  std::map<std::string, int64_t> shape;         // a source task's timed shape (for proximity)
  card_status status = card_status::candidate;
  std::string status_reason;
  provenance prov;                              // who abstracted it
  bool admitted() const {
    return status == card_status::admitted || status == card_status::replay_admitted;
  }
};

// A budget: each action reserves its worst case first and commits what it used.
struct budget {
  std::optional<int64_t> steps, evals, tokens;
  std::optional<double> usd, seconds;
};

enum class run_kind : uint8_t { decompose, optimize, evolve, bench };
enum class run_state : uint8_t { running, finished, failed, interrupted };

struct run {
  std::string id;
  run_kind kind = run_kind::optimize;
  std::string task;
  run_state state = run_state::running;
  budget limits;
  std::string created_at, updated_at;
  std::string args;     // the verb's arguments as JSON text (what --resume re-reads)
  std::string summary;  // the verb's result as JSON text, once finished
  std::string message;  // why it failed or was interrupted
};

const char* to_string(detection_method m);
const char* to_string(termination t);
const char* to_string(forward_status s);
const char* to_string(trial_verdict v);
const char* to_string(card_status s);
const char* to_string(run_kind k);
// A new run's id: "<kind>-YYYYMMDD-HHMMSS-xxxx" (UTC, 4 random hex digits).
std::string new_run_id(run_kind k);
const char* to_string(run_state s);

}  // namespace lathe
