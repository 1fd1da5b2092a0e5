// --cpu-slots N on the verbs that gate CPU kernels: bench (given candidates), evolve, optimize and
// solve (issue 46 item 1; docs/scale.md). One place builds the pool of slots (gate/cpu_slot.h) and
// the verifier that puts each evaluation on a free one (verify/slot_verifier.h), so that the verbs
// split the machine alike and refuse alike.
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "core/error.h"
#include "core/task.h"
#include "gate/cpu_slot.h"
#include "verify/verifier.h"

namespace CLI {
class App;
}

namespace lathe::cli {

// The cores lathe may run on split into `n` slots, one pool for every evaluation of the verb;
// nullptr for n <= 0 (no slots: the whole machine, unpinned, as before --cpu-slots). More slots
// than cores: refused, saying how many cores there are.
result<std::unique_ptr<gate::cpu_slot_pool>> make_cpu_slot_pool(int32_t n);

// The same for a verb whose evaluations are `t`'s: a CUDA task is refused (its evaluations run on
// the GPU, one timing at a time under the device's lock; the slots split CPU cores).
result<std::unique_ptr<gate::cpu_slot_pool>> cpu_slot_pool_for(const task& t, int32_t n);

// The verifier an evaluation goes through: each check or compare on a free slot of `pool`, held
// from its first check to its last timed call (a paired series and its A/A control on one slot),
// or the gate on the whole machine when `pool` is null. `pool` outlives it.
std::unique_ptr<lineages::verifier> pooled_verifier(lineages::gate_hooks hooks, gate::cpu_slot_pool* pool);

// --cpu-slots N on `verb` (0, the default: none); `what` says what goes to the slots.
void add_cpu_slots_option(CLI::App* verb, int32_t& n, const std::string& what);

}  // namespace lathe::cli
