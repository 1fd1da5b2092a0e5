// A proposer that forwards every operation to another one; tests override what they change
// (spoil a kernel, record a request).
#pragma once

#include "agent/proposer.h"

namespace lathe::test {

class delegating : public agent::proposer {
 public:
  explicit delegating(agent::proposer& inner) : inner_(inner) {}
  provenance origin() const override { return inner_.origin(); }
  agent::op_result<agent::proposal> propose_backward(const agent::backward_request& r) override {
    return inner_.propose_backward(r);
  }
  agent::op_result<agent::proposal> rederive_forward(const agent::forward_request& r) override {
    return inner_.rederive_forward(r);
  }
  agent::op_result<agent::audit_result> audit_features(const agent::audit_request& r) override {
    return inner_.audit_features(r);
  }
  agent::op_result<skill_card> abstract_card(const agent::card_request& r) override { return inner_.abstract_card(r); }
  agent::op_result<agent::proposal> materialize(const agent::materialize_request& r) override {
    return inner_.materialize(r);
  }
  agent::op_result<agent::proposal> repair(const agent::repair_request& r) override { return inner_.repair(r); }
  agent::op_result<agent::proposal> seed_baseline(const agent::seed_request& r) override {
    return inner_.seed_baseline(r);
  }
  agent::op_result<agent::ranking> rank_paths(const agent::rank_request& r) override { return inner_.rank_paths(r); }
  agent::op_result<agent::proposal> mutate(const agent::mutate_request& r) override { return inner_.mutate(r); }

 protected:
  agent::proposer& inner_;
};

}  // namespace lathe::test
