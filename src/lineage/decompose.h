// lathe decompose (issue 6, item 2; docs/lineage.md): walk an accepted expert backward through
// verified de-optimizations, one mechanism per step, then re-derive each step forward, in one
// persistent, resumable run.
//
//   backward  the proposer removes one mechanism from the current kernel; the gate checks the
//             predecessor (compiles, correct; it may be slower); the feature audit
//             (feature_audit.h) checks that exactly the claimed feature disappeared and every
//             other written one remained; the step is timed (successor vs predecessor). A
//             rejected attempt becomes a note for the next proposal and a run event.
//   forward   for each accepted step, an independent proposer call re-applies the mechanism to
//             the predecessor from the feature and the action alone (never the backward diff).
//
// Every accepted step is a run event the moment it is accepted, and the lineage is stored again
// with it, so a killed run loses at most the step in flight; `resume_run` rebuilds the state
// from the run's events and goes on from there.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "agent/proposer.h"
#include "core/error.h"
#include "core/expert.h"
#include "core/feature.h"
#include "core/kernel.h"
#include "core/lineage.h"
#include "core/run.h"
#include "core/task.h"
#include "lineage/init.h"
#include "store/store.h"
#include "verify/verifier.h"

namespace lathe::lineages {

// What a progress callback sees: one stored run event (run_log.h kinds) and a line for people.
struct decompose_progress {
  std::string run_id;
  std::string kind;     // "backward_accepted", "backward_rejected", "forward", …
  int32_t step = 0;     // backward step number (1 = the first removal from the expert); 0: none
  std::string message;  // "step 2: removed restrict @ micro_6x16 (1.04x)"
};

struct decompose_options {
  int32_t max_steps = 16;              // accepted backward steps
  int32_t max_rejections = 4;          // consecutive rejected attempts at one step
  std::optional<int32_t> max_total_rejections;  // rejected attempts over the whole walk
  // Proposer edits that together may remove one mechanism: a step whose edit leaves the claimed
  // feature at every locus (a rule removes one `__restrict__` of three) is continued on the
  // intermediate kernel, up to this many edits in all, and gated once, as one step.
  int32_t max_edits_per_step = 8;
  bool forward = true;                 // re-derive each accepted step forward
  // Time each accepted step (successor vs predecessor) and each forward result (vs successor).
  // Off: speedups stay empty and a forward result is accepted on gate + restored feature, and
  // its reason says the speed was not measured.
  bool time = true;
  std::vector<std::string> action_prior;  // backward_request::action_prior
  // The CPU slots the verifier puts evaluations on (lathe decompose --cpu-slots N; 0: none, the
  // whole machine): stored with the run. The backward walk gates one attempt at a time (each
  // depends on the last); the forward phase proposes steps in order until this many hold a
  // kernel to check and gates those checks at once, one per slot (walk_forward), deciding and
  // recording the steps in order.
  int32_t cpu_slots = 0;
  std::optional<std::string> resume_run;  // continue this run (its events) instead of a new one
  // The run's provenance, stored with its arguments: who proposed (the session's label) and the
  // lathe.toml it came from (cli/proposer_choice.h config_source).
  std::string proposer_label, config_source;
  // The new run's id (empty: new_run_id()); given by a caller that tags other records with it
  // before the run starts (the model calls' run_id).
  std::string run_id;
  std::function<void(const decompose_progress&)> progress;  // after each stored event
  init_options init;                      // when init has to run
};

struct decompose_result {
  run r;                              // finished (or failed), its summary JSON set
  lineage l;                          // as stored
  expert_check check;                 // the accepted check the walk started from
  bool ran_init = false;              // init ran in this call
  bool resumed = false;
};

// Runs init when no accepted expert_check exists for (task, expert hash); refuses (an error with
// the check's reason) when init refuses. Errors: a refused expert, a resume_run that does not
// exist or belongs to another task or expert, the store.
result<decompose_result> decompose(const task& t, const kernel_bundle& expert, verifier& v,
                                   agent::proposer& p, store& db, const decompose_options& o);

// The lineage invariants (issue 6): kernels.size() == steps.size() + 1, features.size() ==
// kernels.size(), steps[i].from_kernel == kernels[i] and .to_kernel == kernels[i+1], and each
// step's added/removed features equal the difference of its two kernels' feature sets (by
// name@locus). One message per violation; empty when it holds.
std::vector<std::string> check_invariants(const lineage& l);

// "decompose-YYYYMMDD-HHMMSS-xxxx" (UTC, 4 random hex digits).
std::string new_run_id();
// "<task>/<first 12 hex digits of the expert's hash>/<run id>".
std::string lineage_id(const std::string& task, const std::string& expert_hash, const std::string& run_id);

}  // namespace lathe::lineages
