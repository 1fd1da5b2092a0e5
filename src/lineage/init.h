// lathe init (issue 6, item 1; docs/lineage.md "init"): accept an expert kernel as a lineage end
// point, or refuse it with the reason. Every verdict is stored (store::add_expert_check), so a
// later decompose knows whether the expert was accepted and why not.
//
// In order, the first failing condition refusing:
//   1. it builds (verifier.object);
//   2. link-level screening of the built object finds no library delegation the task does not
//      allow (screening.h: nm -D, nm -C, ldd) — before the gate, because it is cheap and its
//      reason is more precise than the gate's `forbidden`;
//   3. the gate passes it against the task's baseline (verifier.compare) and it is fast: its
//      paired ratio clears 1 + margin (verifier.h margin: the A/A noise, floored per platform);
//      when the baseline is a vendor library (its manifest links one) and the task has a naive
//      kernel, the bar is the naive kernel instead (the lineage's other end): the library is
//      compared with once and its ratio recorded (library_ratio), since a hand-written kernel
//      at 46% of cuBLAS is still the expert of its lineage; without a naive kernel, on par with
//      the library (ratio >= 1 - margin) counts;
//   4. a re-measure in a fresh evaluation (a second verifier.compare, fresh workers) confirms the
//      speed by the same rule.
// When the task's baseline is the expert itself there is nothing to compare it with: it is
// checked (verifier.check), accepted, and the reason says so.
// An evaluation the gate calls `unstable` (correct, but the A/A control says the machine is too
// noisy to decide), or whose ratio misses the bar only because of its A/A margin (it would clear
// it with the platform's floor margin), is asked again, `unstable_retries` times, then refuses
// ("too noisy to confirm its speed").
//
// Features: verifier.features (artifact first, then source; each with its method) and, for the
// registry names of the task's platform that no detector covers, the proposer's audit
// (method proposer_audit); names the audit cannot decide either are `unknown_features`.
#pragma once

#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>

#include "agent/proposer.h"
#include "core/error.h"
#include "core/expert.h"
#include "core/kernel.h"
#include "core/task.h"
#include "store/store.h"
#include "verify/verifier.h"

namespace lathe::lineages {

struct init_options {
  // Read-only context for the proposer (--repo): recorded, never written; must be a directory.
  std::optional<std::filesystem::path> repo;
  int32_t unstable_retries = 2;  // re-asks of an evaluation too noisy to decide
};

// The baseline the expert is measured against: the task's named baseline kernel, loaded.
result<kernel_bundle> task_baseline(const task& t);

// Runs the checks above and stores the verdict. Errors only when the verdict could not be
// reached or stored (a missing baseline, a --repo that is not a directory, the store); a refused
// expert is a stored check with `accepted` false.
result<expert_check> init_expert(const task& t, const kernel_bundle& expert, verifier& v,
                                 agent::proposer& p, store& db, const init_options& o);

// "platform: cpu; architecture: x86-64-v3": what the proposer is told about the target.
std::string target_summary(const task& t, const std::string& arch);

}  // namespace lathe::lineages
