// decompose's other paths through the real gate (issue 6): a wrong kernel rejected by the gate
// and kept as evidence before the walk goes on, step_limit, rejection_limit (consecutive and
// total), and a walk driven by the mock model through the LLM proposer.
#include <algorithm>
#include <cstdio>

#include "agent/delegating.h"
#include "agent/llm_proposer.h"
#include "lineage_fixture.h"
#include "llm/command.h"

namespace lathe::lineage_test {
namespace {

using lineages::decompose;
using lineages::decompose_options;

using test::delegating;

// softmax's normalization made wrong by one character: the gate, not the test, must notice.
kernel_bundle spoiled(kernel_bundle k) {
  for (auto& [path, text] : k.sources) {
    const auto at = text.find("1.0f / exp_and_sum");
    if (at != std::string::npos) text.replace(at, 4, "0.5f");
  }
  k.hash = bundle_hash(k);
  return k;
}

// The rule engine's proposal with its kernel spoiled: the first `wrong` times, or always. After
// that it asks the engine without the notes (a proposer that learns nothing from them), so the
// step it then gets right is the one it first got wrong, whatever else the catalog holds.
class spoiling : public delegating {
 public:
  spoiling(agent::proposer& inner, int wrong) : delegating(inner), wrong_(wrong) {}
  agent::op_result<agent::proposal> propose_backward(const agent::backward_request& r) override {
    if (wrong_ >= 0 && calls_ >= wrong_) {
      agent::backward_request fresh = r;
      fresh.rejected.clear();
      return inner_.propose_backward(fresh);
    }
    ++calls_;
    if (!first_) {
      auto p = inner_.propose_backward(r);
      if (!p) return p;
      first_ = *p;
      first_->kernel = spoiled(first_->kernel);
    }
    return *first_;  // the same wrong kernel, whatever the notes say
  }
  int calls() const { return calls_; }
  std::string spoiled_hash() const { return first_ ? first_->kernel.hash : ""; }

 private:
  int wrong_;  // -1: always
  int calls_ = 0;
  std::optional<agent::proposal> first_;
};

class decompose_paths : public lineage_env {
 protected:
  void SetUp() override {
    lineage_env::SetUp();
    t_ = small_softmax();
    expert_ = shipped_kernel(t_, "expert");
    ASSERT_NE(expert_.sources.begin()->second.find("1.0f / exp_and_sum"), std::string::npos);
  }
  task t_;
  kernel_bundle expert_;
};

TEST_F(decompose_paths, a_gate_rejection_is_kept_as_evidence_and_the_walk_goes_on_to_its_step_limit) {
  seed_check(t_, expert_);
  agent::rules::rules_proposer rules(agent::rules::options_for(t_));
  spoiling p(rules, 1);
  decompose_options o;
  o.max_steps = 1;
  o.forward = false;
  o.time = false;
  auto r = decompose(t_, expert_, *verifier_, p, *db_, o);
  ASSERT_TRUE(r) << r.error().message;
  EXPECT_TRUE(lineages::check_invariants(r->l).empty()) << join(lineages::check_invariants(r->l), "\n");
  EXPECT_EQ(r->l.term, termination::step_limit) << r->l.reason;
  EXPECT_NE(r->l.reason.find("max_steps (1)"), std::string::npos) << r->l.reason;
  EXPECT_FALSE(r->l.remaining_features.empty());
  ASSERT_EQ(r->l.steps.size(), 1u);
  const transition& s = r->l.steps[0];
  ASSERT_EQ(s.rejected.size(), 1u);
  EXPECT_NE(s.rejected[0].find("gate wrong_result"), std::string::npos) << s.rejected[0];
  // The accepted step is the spoiled one done right, and the rejection is a run event with the
  // gate's verdict on the kernel that was really built.
  ASSERT_FALSE(p.spoiled_hash().empty());
  EXPECT_NE(s.from_kernel, p.spoiled_hash());
  EXPECT_EQ(spoiled(stored(s.from_kernel)).hash, p.spoiled_hash());
  int rejected = 0;
  for (const auto& e : events(r->r.id))
    if (e.kind == lineages::event_kind::backward_rejected) {
      const auto j = nlohmann::json::parse(e.json);
      EXPECT_EQ(j.at("stage"), "gate");
      EXPECT_EQ(j.at("outcome"), "wrong_result");
      EXPECT_EQ(j.at("step"), 1);
      ASSERT_EQ(j.at("evaluations").size(), 1u);
      auto ev = db_->get_evaluation(j.at("evaluations")[0].get<int64_t>());
      ASSERT_TRUE(ev) << ev.error().message;
      EXPECT_EQ(ev->result, outcome::wrong_result);
      EXPECT_EQ(ev->kernel_hash, p.spoiled_hash());
      EXPECT_EQ(j.at("kernel").get<std::string>(), p.spoiled_hash());
      ++rejected;
    }
  EXPECT_EQ(rejected, 1);
}

TEST_F(decompose_paths, consecutive_and_total_rejections_end_the_walk) {
  seed_check(t_, expert_);
  agent::rules::rules_proposer rules(agent::rules::options_for(t_));
  {
    spoiling p(rules, -1);
    decompose_options o;
    o.max_rejections = 2;
    o.time = false;
    auto r = decompose(t_, expert_, *verifier_, p, *db_, o);
    ASSERT_TRUE(r) << r.error().message;
    EXPECT_EQ(r->l.term, termination::rejection_limit) << r->l.reason;
    EXPECT_NE(r->l.reason.find("2 consecutive rejected attempts at step 1"), std::string::npos) << r->l.reason;
    EXPECT_TRUE(r->l.steps.empty());
    EXPECT_EQ(r->l.kernels, std::vector<std::string>{expert_.hash});
    EXPECT_TRUE(lineages::check_invariants(r->l).empty());
    EXPECT_EQ(p.calls(), 2);
  }
  {
    spoiling p(rules, -1);
    decompose_options o;
    o.max_rejections = 5;
    o.max_total_rejections = 1;
    o.time = false;
    auto r = decompose(t_, expert_, *verifier_, p, *db_, o);
    ASSERT_TRUE(r) << r.error().message;
    EXPECT_EQ(r->l.term, termination::rejection_limit);
    EXPECT_NE(r->l.reason.find("max_total_rejections 1"), std::string::npos) << r->l.reason;
    EXPECT_EQ(p.calls(), 1);
  }
}

// The mock model behind the `command` provider and the real LLM proposer: its code is built and
// gated like any model's. What it removes is its own choice; the walk's bookkeeping must hold.
TEST_F(decompose_paths, the_mock_model_walks_softmax_through_the_llm_proposer) {
  auto prompts = agent::prompt_library::load(source_dir() / "prompts");
  ASSERT_TRUE(prompts) << prompts.error().message;
  llm::command_config cc;
  cc.name = "mock";
  cc.argv = {LATHE_MOCK_MODEL, "--seed", "3"};
  cc.timeout_seconds = 60;
  llm::command_provider model(cc);
  agent::llm_proposer p(model, *prompts);
  decompose_options o;
  o.max_steps = 4;
  o.time = false;
  std::vector<std::string> log;
  o.progress = [&](const lineages::decompose_progress& e) {
    log.push_back(e.kind);
    std::printf("  %s\n", e.message.substr(0, 300).c_str());
  };
  auto r = decompose(t_, expert_, *verifier_, p, *db_, o);
  ASSERT_TRUE(r) << r.error().message;
  EXPECT_TRUE(r->ran_init);  // init ran, timed twice, and the mock audited what no detector decides
  EXPECT_TRUE(r->check.accepted) << r->check.reason;
  EXPECT_TRUE(lineages::check_invariants(r->l).empty()) << join(lineages::check_invariants(r->l), "\n");
  ASSERT_GE(r->l.steps.size(), 1u) << r->l.reason;
  for (const auto& s : r->l.steps) {
    EXPECT_EQ(s.prov.kind, "llm");
    EXPECT_NE(to_string(s.prov).find("mock"), std::string::npos) << to_string(s.prov);
    EXPECT_FALSE(s.added.empty());
    EXPECT_NE(s.forward.status, forward_status::not_tried);
    // The predecessor was really built and checked: its evaluation is stored as passing.
    ASSERT_FALSE(s.evaluations.empty());
    auto ev = db_->get_evaluation(s.evaluations.front());
    ASSERT_TRUE(ev) << ev.error().message;
    EXPECT_EQ(ev->result, outcome::ok);
    EXPECT_EQ(ev->kernel_hash, s.from_kernel);
  }
  EXPECT_NE(r->l.reason, "");
  // Whatever stopped it, the reason names every feature left (a model's refusal may not: the
  // walk adds them).
  for (const auto& n : r->l.remaining_features) EXPECT_NE(r->l.reason.find(n), std::string::npos) << n;
  EXPECT_TRUE(std::find(log.begin(), log.end(), "backward_accepted") != log.end());
  EXPECT_EQ(log.back(), lineages::event_kind::finished);
}

}  // namespace
}  // namespace lathe::lineage_test
