// A verifier wrapped around another: every question forwarded to the inner verifier, so that a
// wrapper overrides only what it changes (slot_verifier: where a check or a comparison runs; a
// test's features-only verifier: no gate run at all) and says nothing again about the rest.
#pragma once

#include <memory>
#include <utility>

#include "verify/verifier.h"

namespace lathe::lineages {

class verifier_decorator : public verifier {
 public:
  // `inner` outlives this wrapper.
  explicit verifier_decorator(verifier& inner) : inner_(&inner) {}
  // `inner` owned by this wrapper (one made for it alone, as slot_verifier's gate_verifier).
  explicit verifier_decorator(std::unique_ptr<verifier> inner) : owned_(std::move(inner)), inner_(owned_.get()) {}

  evaluation check(const task& t, const kernel_bundle& k, const kernel_bundle& baseline,
                   const provenance& prov) override {
    return inner_->check(t, k, baseline, prov);
  }
  evaluation compare(const task& t, const kernel_bundle& candidate, const kernel_bundle& baseline,
                     const provenance& prov) override {
    return inner_->compare(t, candidate, baseline, prov);
  }
  agent::rules::detections features(const task& t, const kernel_bundle& k) override { return inner_->features(t, k); }
  result<std::filesystem::path> object(const task& t, const kernel_bundle& k) override { return inner_->object(t, k); }

 protected:
  verifier& inner() { return *inner_; }

 private:
  std::unique_ptr<verifier> owned_;
  verifier* inner_;
};

}  // namespace lathe::lineages
