#include "verify/slot_verifier.h"

namespace lathe::lineages {

evaluation slot_verifier::run(const task& t, const kernel_bundle& c, const kernel_bundle& b,
                              const provenance& prov, bool time) {
  auto held = pool_.take();  // released when this evaluation is stored
  if (!held) {
    // Lathe's failure, not the kernel's (a lock file it cannot open): infra_error, stored like
    // any evaluation so that the caller sees why.
    evaluation e;
    e.task = t.name;
    e.kernel_hash = c.hash;
    e.kernel_name = c.name;
    e.baseline_hash = b.hash;
    e.baseline_name = b.name;
    e.prov = prov;
    e.result = outcome::infra_error;
    e.message = "no CPU slot: " + held.error().message;
    if (hooks_.record) (void)hooks_.record(c, e);
    return e;
  }
  gate_hooks on_slot = hooks_;
  on_slot.config = [base = hooks_.config, s = held->slot()](const task& tk, bool timed) {
    gate::gate_config cfg = base(tk, timed);
    cfg.slot = s;
    return cfg;
  };
  gate_verifier v(std::move(on_slot));
  return time ? v.compare(t, c, b, prov) : v.check(t, c, b, prov);
}

evaluation slot_verifier::check(const task& t, const kernel_bundle& k, const kernel_bundle& baseline,
                                const provenance& prov) {
  return run(t, k, baseline, prov, false);
}

evaluation slot_verifier::compare(const task& t, const kernel_bundle& candidate, const kernel_bundle& baseline,
                                  const provenance& prov) {
  return run(t, candidate, baseline, prov, true);
}

}  // namespace lathe::lineages
