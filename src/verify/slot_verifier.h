// The gate on a pool of CPU slots (gate/cpu_slot.h, issue 46 item 1): each check or compare takes
// any free slot, holds its lock for the whole evaluation (its checks and, for compare, both
// sides of the paired series and the A/A control: a series never spans two slots) and runs
// every worker pinned to the slot's cores. The stored evaluation names its slot. Features and
// objects run no kernel: no slot taken, forwarded to a gate_verifier (verifier_decorator).
#pragma once

#include <memory>

#include "gate/cpu_slot.h"
#include "verify/verifier_decorator.h"

namespace lathe::lineages {

class slot_verifier final : public verifier_decorator {
 public:
  // `pool` is shared by every evaluation in flight and outlives this verifier.
  slot_verifier(gate_hooks hooks, gate::cpu_slot_pool& pool)
      : verifier_decorator(std::make_unique<gate_verifier>(hooks)), hooks_(std::move(hooks)), pool_(pool) {}
  evaluation check(const task& t, const kernel_bundle& k, const kernel_bundle& baseline,
                   const provenance& prov) override;
  evaluation compare(const task& t, const kernel_bundle& candidate, const kernel_bundle& baseline,
                     const provenance& prov) override;

 private:
  evaluation run(const task& t, const kernel_bundle& c, const kernel_bundle& b, const provenance& prov, bool time);
  gate_hooks hooks_;
  gate::cpu_slot_pool& pool_;
};

}  // namespace lathe::lineages
