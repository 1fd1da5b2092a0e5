// A skill card (DESIGN.md) and its trials. Defined in core/, like lineages, so that store/ and
// skills/ share them; its own header so that editing a card rebuilds only what reads cards
// (not the gate, the detectors or the model layer). JSON: core/json_card.h.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "core/candidate_language.h"
#include "core/provenance.h"

namespace lathe {

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
  // What kernel_before is written in: a card learned on C-ABI kernels may be tried inside a
  // ModelNew's inline extension (issue 44, item 3). Absent from records older than the field: c-abi.
  candidate_language lang = candidate_language::c_abi;
};

// What a tuned-knobs card says (docs/skills.md "Tuned knobs"): `lathe tune` crowned `values`
// over the kernel's default `defaults` on the card's target (the crown: a fresh paired series
// decided faster). Applying it is mechanical: the same tunables set to these values on a kernel
// that declares them (same names, values in its space, its constraints met), then gated.
struct card_tuning {
  std::map<std::string, int64_t> values;    // the winner: every tunable's value
  std::map<std::string, int64_t> defaults;  // the default configuration it was measured against
  std::optional<double> lo, hi;             // the crowning paired ratio's 95% interval
  std::string kernel;                       // the tuned kernel's name ("tunable")
  std::string run;                          // the tune run that crowned it
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
  // The language of the kernels its evidence was measured on: the carrier language (c-abi for a
  // card mined from a lineage of lathe_launch bundles). Absent from older records: c-abi.
  candidate_language evidence_lang = candidate_language::c_abi;
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
  // Set on a card made from a tune run (action "tune"): the configuration it applies. Such a card
  // provides no feature; its family is its tunables' names, its carrier the configuration.
  std::optional<card_tuning> tuned;
  bool admitted() const {
    return status == card_status::admitted || status == card_status::replay_admitted;
  }
};

const char* to_string(trial_verdict v);
const char* to_string(card_status s);

}  // namespace lathe
