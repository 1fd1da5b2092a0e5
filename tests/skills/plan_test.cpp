// optimize's skills plan on a ModelNew best (search/plan.h; issue 44, item 3): lathe detects no features
// in a ModelNew, so a card the loop accepted into the best was never `present` there and was
// offered again on the next best, spending a step. What the accepted cards provide is carried by
// the ModelNew they made, and retrieval turns the card away there; a C-ABI best still answers to
// the detectors alone. Nothing is proposed or gated: the plan's requests are read, not called.
#include <gtest/gtest.h>

#include "agent/rules/rules_proposer.h"
#include "core/test_util.h"
#include "search/plan.h"

namespace lathe::skills_test {
namespace {

namespace fs = std::filesystem;

skill_card omp_card() {
  skill_card c;
  c.id = "omp-card";
  c.name = "omp-card";
  c.intent = "Add omp_parallel: the element loop across threads";
  c.op = "silu";
  c.provides_features = {"omp_parallel"};
  c.carriers["cpp/cpu"] = "#pragma omp parallel for";
  c.declared_ratio = 1.9;
  c.target = "x86-64-v3";
  c.status = card_status::admitted;
  return c;
}

kernel_bundle python_kernel(const std::string& name, const std::string& body) {
  kernel_bundle k;
  k.name = name;
  k.manifest.lang = language::python;
  k.manifest.entry = "eager.py";
  k.manifest.files = {"eager.py"};
  k.sources["eager.py"] = "import torch\n\nclass Model(torch.nn.Module):\n    pass\n\n" + body;
  k.hash = name;
  return k;
}

TEST(skills_plan, a_card_accepted_into_a_modelnew_is_not_offered_again_on_it) {
  test::temp_dir dir;
  auto db = store::open(dir.path() / "lathe.db");
  ASSERT_TRUE(db) << db.error().message;
  ASSERT_TRUE(db->put_card(omp_card()));
  task t;
  t.name = "25_Swish";
  t.op = "25_Swish";
  t.plat = platform::cpu;
  t.problem = "/problems/25_Swish.py";
  t.problem_model = R"({"forward": [{"input": 0}], "state": [], "ops": ["mul", "sigmoid"]})";
  search::optimize_options o;
  o.strat = search::strategy::skills;
  o.tgt.plat = platform::cpu;
  o.tgt.arch = "x86-64-v3";
  agent::rules::rules_proposer rules;
  auto p = search::make_plan(t, rules, *db, o, [](const agent::rank_request&) {
    return result<std::vector<std::string>>(std::vector<std::string>{});
  });
  ASSERT_TRUE(p) << p.error().message;
  search::plan& plan = **p;

  const kernel_bundle eager = python_kernel("eager", "class ModelNew(Model):\n    pass\n");
  auto first = plan.next(eager, {}, "cpu", {}, {}, {});
  ASSERT_TRUE(first) << first.error().message;
  EXPECT_EQ(first->op, "materialize");  // a C-ABI card for a ModelNew: its C++ goes into an extension
  EXPECT_EQ(first->source, "card:omp-card");
  plan.proposed(*first, eager);

  // The card's ModelNew is accepted: the next best offers the free mutation, not the card again.
  const kernel_bundle fused = python_kernel("fused", "class ModelNew(torch.nn.Module):\n    pass\n");
  plan.accepted(*first, eager, fused);
  auto second = plan.next(fused, {}, "cpu", {}, {}, {});
  ASSERT_TRUE(second) << second.error().message;
  EXPECT_EQ(second->op, "mutate");
  EXPECT_EQ(second->source, "free");
  // And what it carries passes to a best made from it by a free step.
  const kernel_bundle later = python_kernel("later", "class ModelNew(torch.nn.Module):\n    x = 1\n");
  plan.accepted(*second, fused, later);
  auto third = plan.next(later, {}, "cpu", {}, {}, {});
  ASSERT_TRUE(third) << third.error().message;
  EXPECT_EQ(third->source, "free");

  // Without the acceptance (another ModelNew the card never made), the card is offered.
  const kernel_bundle other = python_kernel("other", "class ModelNew(torch.nn.Module):\n    y = 2\n");
  auto fresh = plan.next(other, {}, "cpu", {}, {}, {});
  ASSERT_TRUE(fresh) << fresh.error().message;
  EXPECT_EQ(fresh->source, "card:omp-card");
}

}  // namespace
}  // namespace lathe::skills_test
