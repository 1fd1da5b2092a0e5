// A decompose run's events (store: run_events) and the walk's state rebuilt from them
// (docs/lineage.md "Run events"). The events are the run's memory: a resumed run reads only
// them, the stored kernels and the run's args, so what they hold is exactly what the walk needs
// to go on without repeating an accepted step.
//
// Kinds and bodies (JSON objects):
//   started            {"task", "expert": {"name", "hash"}, "check": id, "lineage",
//                       "features": [feature…] (the expert's, as the walk starts from them)}
//   init               {"check": id, "accepted": bool, "reason"}
//   resumed            {"from_seq": n, "steps": accepted so far}
//   backward_rejected  {"step", "attempt", "stage": proposer|claim|gate|audit, "summary",
//                       "outcome", "kernel", "evaluations": [...], "provenance"}
//   backward_accepted  {"step", "transition": {…}, "claimed": [feature…], "predecessor":
//                       {"name", "hash"}, "features": [feature…], "notes": [...]}
//   backward_finished  {"termination", "reason", "remaining_features": [...]}
//   forward            {"step", "result": forward_result, "invocation": rule carrier or ""}
//   finished           {"termination", "reason", "steps", "forward": {status: count}}
// `step` is the backward step number: 1 removes a mechanism from the expert.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "agent/proposer.h"
#include "core/error.h"
#include "core/feature.h"
#include "core/kernel.h"
#include "core/lineage.h"
#include "core/provenance.h"
#include "store/store.h"

namespace lathe::lineages {

namespace event_kind {
inline constexpr const char* started = "started";
inline constexpr const char* init = "init";
inline constexpr const char* resumed = "resumed";
inline constexpr const char* backward_rejected = "backward_rejected";
inline constexpr const char* backward_accepted = "backward_accepted";
inline constexpr const char* backward_finished = "backward_finished";
inline constexpr const char* forward = "forward";
inline constexpr const char* finished = "finished";
}  // namespace event_kind

struct rejected_attempt {
  int32_t step = 0, attempt = 0;
  std::string stage;    // proposer | claim | gate | audit
  std::string summary;  // what the next proposal is told
  std::string outcome;  // the gate's, when it ran
  std::string kernel;   // the rejected kernel's hash, when one was written
  std::vector<int64_t> evaluations;
  provenance prov;
};

struct accepted_step {
  int32_t step = 0;
  transition tr;                   // from = predecessor, to = successor (optimizing direction)
  // The mechanism removed: per claimed name, its first vanished locus (with params). Usually one.
  std::vector<feature> claimed;
  std::string predecessor_name;
  std::vector<feature> features;   // the predecessor's (detections + audit), all of them
  std::vector<std::string> notes;  // the audit's notes
};

struct backward_end {
  termination term = termination::unknown;
  std::string reason;
  std::vector<std::string> remaining;  // "name @ locus" of the written features left
};

// Bodies (JSON text) of each kind.
std::string started_body(const std::string& task, const kernel_bundle& expert, int64_t check_id,
                         const std::string& lineage_id, const std::vector<feature>& features);
std::string rejected_body(const rejected_attempt& a);
std::string accepted_body(const accepted_step& s);
std::string backward_end_body(const backward_end& e);
std::string forward_body(int32_t step, const forward_result& f, const std::string& invocation);

// The walk as its events left it.
struct walk_state {
  bool started = false;
  int64_t check_id = 0;
  std::vector<feature> expert_features;       // from `started`
  std::vector<accepted_step> accepted;        // in backward order: [0] removed from the expert
  std::vector<rejected_attempt> rejected;     // every rejected attempt, in order
  std::optional<backward_end> backward_done;
  std::map<int32_t, forward_result> forwards; // by backward step number
  std::map<int32_t, std::string> invocations; // forward rule carriers, by step
  bool finished = false;
  int64_t last_seq = 0;
  // The rejected attempts since the last accepted step (the current step's notes).
  std::vector<rejected_attempt> pending() const;
};

// Rebuilds the state; an event that does not parse is an error naming its seq.
result<walk_state> replay(const std::vector<run_event>& events);

}  // namespace lathe::lineages
