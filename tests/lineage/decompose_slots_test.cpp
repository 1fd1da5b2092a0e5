// decompose on CPU slots (decompose_options::cpu_slots, `lathe decompose --cpu-slots N`; issue 46
// item 1) through the real gate and the rule engine, checks only (nothing timed: `unit`, beside
// other tests; the expert check seeded, as init has its own tests): the gemm expert walked with its
// evaluations on one slot and on two. The two-slot run's forward phase gates its steps' checks on
// slot 0 and slot 1 at once (the stored evaluations name their slots and overlap in time), and
// both runs reach the same lineage: the same kernels, steps and forward verdicts.
#include <sched.h>

#include <set>

#include "evaluation_spans.h"
#include "gate/cpu_slot.h"
#include "lineage_fixture.h"
#include "verify/slot_verifier.h"

namespace lathe::lineage_test {
namespace {

using lineages::decompose;
using lineages::decompose_options;
using lineages::decompose_result;

class decompose_slots : public lineage_env {
 protected:
  // The gemm expert decomposed checks only, every evaluation on a free slot of `slots`.
  decompose_result run_on(const task& t, const kernel_bundle& expert, uint32_t slots) {
    auto split = gate::split_cores(gate::allowed_cores(), slots);
    EXPECT_TRUE(split) << split.error().message;
    if (!split) return {};
    gate::cpu_slot_pool pool(std::move(*split));
    lineages::slot_verifier v(hooks(), pool);
    agent::rules::rules_proposer rules(agent::rules::options_for(t));
    decompose_options o;
    o.time = false;
    o.cpu_slots = static_cast<int32_t>(slots);
    auto r = decompose(t, expert, v, rules, *db_, o);
    EXPECT_TRUE(r) << (r ? "" : r.error().message);
    return r ? *r : decompose_result{};
  }
};

TEST_F(decompose_slots, forward_checks_run_on_two_slots_at_once_with_the_lineage_of_one_slot) {
  if (gate::allowed_cores().size() < 2) GTEST_SKIP() << "one core: two CPU slots cannot be made here";
  const task t = shipped("gemm");
  const kernel_bundle expert = shipped_kernel(t, "expert");
  seed_check(t, expert);
  const decompose_result one = run_on(t, expert, 1);
  const decompose_result two = run_on(t, expert, 2);
  ASSERT_FALSE(one.l.id.empty());
  ASSERT_FALSE(two.l.id.empty());
  ASSERT_GE(two.l.steps.size(), 2u) << "two forward checks at once need two accepted steps";

  // The same lineage: the slots change where its evaluations ran, not what they decided.
  EXPECT_EQ(two.l.kernels, one.l.kernels);
  EXPECT_EQ(two.l.term, one.l.term);
  ASSERT_EQ(two.l.steps.size(), one.l.steps.size());
  for (size_t i = 0; i < one.l.steps.size(); ++i) {
    EXPECT_EQ(two.l.steps[i].action, one.l.steps[i].action) << "step " << i + 1;
    EXPECT_EQ(two.l.steps[i].forward.status, one.l.steps[i].forward.status) << "step " << i + 1;
    EXPECT_EQ(two.l.steps[i].forward.kernel, one.l.steps[i].forward.kernel) << "step " << i + 1;
  }
  EXPECT_TRUE(lineages::check_invariants(two.l).empty());

  // Every evaluation of each run names a slot of its split; the two-slot run's forward checks
  // ran on both slots, one of each at the same time.
  const auto when = lathe::testing::evaluation_spans(*db_);
  auto slot_of = [&](int64_t id) {
    auto e = db_->get_evaluation(id);
    EXPECT_TRUE(e && e->slot) << "evaluation " << id << " names no slot";
    return e && e->slot ? *e->slot : slot_record{};
  };
  for (const auto& s : one.l.steps)
    for (int64_t id : s.forward.evaluations) EXPECT_EQ(slot_of(id).count, 1u) << id;
  std::vector<std::pair<uint32_t, int64_t>> forward;  // (slot, evaluation) of the checks made anew
  std::set<int64_t> backward;
  for (const auto& s : two.l.steps) backward.insert(s.evaluations.begin(), s.evaluations.end());
  for (const auto& s : two.l.steps)
    for (int64_t id : s.forward.evaluations) {
      const slot_record r = slot_of(id);
      EXPECT_EQ(r.count, 2u) << id;
      if (!backward.count(id)) forward.push_back({r.index, id});  // an identity round trip reuses the step's
    }
  std::set<uint32_t> used;
  for (const auto& [slot, id] : forward) used.insert(slot);
  EXPECT_EQ(used, (std::set<uint32_t>{0, 1})) << forward.size() << " forward check(s)";
  int overlapping = 0;
  for (const auto& [sx, x] : forward)
    for (const auto& [sy, y] : forward)
      if (sx == 0 && sy == 1 && lathe::testing::overlapped(when.at(x), when.at(y)))
        ++overlapping;
  EXPECT_GE(overlapping, 1) << "no forward check on slot 0 overlapped one on slot 1";
}

}  // namespace
}  // namespace lathe::lineage_test
