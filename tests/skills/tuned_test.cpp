// Tuned knobs as cards (skills/tuned.h) on the mm task's tunable kernel
// (tests/integration/tasks/mm/kernels/tunable: ORDER in {0, 1}, TILE in {16, 64}, the constraint
// ORDER == 1 || TILE <= 16): the card a win makes, its JSON, which kernels retrieval serves it to
// (the same tunables on the same target, a candidate retrieved under admitted_only) and why it
// turns others away, and its mechanical application: a configured bundle, or the value or
// constraint that refused it; and what optimize's skills plan asks for it (a `configure` request,
// alone, called here, not gated). The win here is given; tests/search/tune_cli_test.cpp makes one
// through the real gate.
#include <gtest/gtest.h>

#include <filesystem>

#include "agent/rules/rules_proposer.h"
#include "core/json_card.h"
#include "core/test_util.h"
#include "search/plan.h"
#include "skills/retrieve.h"
#include "skills/tuned.h"
#include "spec/bundle.h"
#include "spec/task_file.h"
#include "spec/tune.h"

using namespace lathe;
using namespace lathe::skills;

namespace {

struct tuned_knobs : ::testing::Test {
  void SetUp() override {
    const std::filesystem::path dir = std::string(LATHE_SOURCE_DIR) + "/tests/integration/tasks/mm";
    auto t = load_task(dir / "task.toml");
    ASSERT_TRUE(t) << t.error().message;
    mm = *t;
    auto k = load_bundle(dir / "kernels/tunable");
    ASSERT_TRUE(k) << k.error().message;
    kernel = *k;
    tgt.plat = platform::cpu;
    tgt.arch = "x86-64-v3";
    tgt.device = "test CPU";
    tgt.cores = 2;
    win.t = &mm;
    win.tgt = tgt;
    win.kernel = kernel.name;
    win.default_hash = "feedbeef";
    win.defaults = kernel.manifest.tune.defaults;
    win.winner = {{"ORDER", 1}, {"TILE", 64}};
    win.ratio = 3.5;
    win.lo = 3.1;
    win.hi = 3.9;
    win.evidence = {42, 17};
    win.run = "tune-x";
  }
  // The kernel with its space replaced (the same source, another family member).
  kernel_bundle with_space(std::vector<tunable> params, std::vector<std::string> constraints) const {
    kernel_bundle k = kernel;
    k.manifest.tune.params = std::move(params);
    k.manifest.tune.constraints = std::move(constraints);
    return k;
  }
  task mm;
  kernel_bundle kernel;
  target tgt;
  tune_win win;
};

TEST_F(tuned_knobs, a_win_becomes_a_card_with_its_evidence_scope_and_action) {
  const skill_card c = card_from_tune(win);
  EXPECT_EQ(c.action, "tune");
  EXPECT_EQ(c.op, "gemm");
  EXPECT_EQ(c.target, "x86-64-v3");
  EXPECT_EQ(c.evidence, (std::vector<int64_t>{42, 17}));
  ASSERT_TRUE(c.declared_ratio);
  EXPECT_DOUBLE_EQ(*c.declared_ratio, 3.5);
  EXPECT_EQ(c.status, card_status::candidate);
  EXPECT_EQ(to_string(c.prov), to_string(provenance{"rules", "tune", true}));
  EXPECT_NE(c.scope.find("ORDER, TILE"), std::string::npos) << c.scope;
  EXPECT_NE(c.scope.find("gemm"), std::string::npos) << c.scope;
  EXPECT_NE(c.effect.find("3.500x [3.100, 3.900]"), std::string::npos) << c.effect;
  ASSERT_TRUE(c.tuned);
  EXPECT_EQ(c.tuned->values, win.winner);
  EXPECT_EQ(c.tuned->defaults, (tune_config{{"ORDER", 0}, {"TILE", 16}}));
  EXPECT_TRUE(c.provides_features.empty());
  // The same kernel on the same target: the same card; another target: another card.
  EXPECT_EQ(card_from_tune(win).id, c.id);
  tune_win other = win;
  other.tgt.arch = "x86-64-v4";
  EXPECT_NE(card_from_tune(other).id, c.id);
  // Other values crowned: another card (admission's trials stay with the values they tried).
  tune_win values = win;
  values.winner = {{"ORDER", 0}, {"TILE", 32}};
  EXPECT_NE(card_from_tune(values).id, c.id);
  EXPECT_TRUE(crowned_here(c));

  // Stored as JSON and read back with its configuration.
  const skill_card back = json(c).get<skill_card>();
  ASSERT_TRUE(back.tuned);
  EXPECT_EQ(back.tuned->values, c.tuned->values);
  EXPECT_EQ(back.tuned->defaults, c.tuned->defaults);
  EXPECT_EQ(back.tuned->lo, c.tuned->lo);
  EXPECT_EQ(back.tuned->run, "tune-x");
  EXPECT_FALSE(json(skill_card{}).contains("tuned"));
}

TEST_F(tuned_knobs, applied_to_a_kernel_of_its_family_it_is_the_configured_bundle) {
  const skill_card c = card_from_tune(win);
  auto k = apply_tuned(c, kernel, mm, tgt);
  ASSERT_TRUE(k) << k.error().message;
  auto want = configure(kernel, win.winner);
  ASSERT_TRUE(want);
  EXPECT_EQ(k->hash, want->hash);
  EXPECT_EQ(k->manifest.defines.at("ORDER"), "1");
  EXPECT_EQ(k->manifest.defines.at("TILE"), "64");
  EXPECT_NE(k->hash, kernel.hash);
}

TEST_F(tuned_knobs, values_outside_the_space_or_against_its_constraints_are_refused_with_the_reason) {
  const skill_card c = card_from_tune(win);
  auto narrow = apply_tuned(c, with_space({{"ORDER", {0, 1}}, {"TILE", {16, 32}}}, {}), mm, tgt);
  ASSERT_FALSE(narrow);
  EXPECT_NE(narrow.error().message.find("TILE = 64 is outside the kernel's declared values (16, 32)"), std::string::npos)
      << narrow.error().message;
  // A constraint over the shape symbols: the timed set's N = 256 is not a multiple of 64 * 3.
  auto bound = apply_tuned(c, with_space({{"ORDER", {0, 1}}, {"TILE", {16, 64}}}, {"N % (TILE * 3) == 0 || TILE == 16"}), mm, tgt);
  ASSERT_FALSE(bound);
  EXPECT_NE(bound.error().message.find("breaks the kernel's constraint 'N % (TILE * 3) == 0 || TILE == 16' on shape set"),
            std::string::npos)
      << bound.error().message;
  // A tunable named like a shape symbol would stand in for the shape in a constraint: refused, as
  // lathe tune refuses the space (one rule, spec/tune.h).
  skill_card shadow = c;
  shadow.tuned->values = {{"N", 128}};
  auto shadowed = apply_tuned(shadow, with_space({{"N", {128, 256}}}, {"N % 64 == 0"}), mm, tgt);
  ASSERT_FALSE(shadowed);
  EXPECT_NE(shadowed.error().message.find("tunable 'N' has the name of a shape symbol"), std::string::npos)
      << shadowed.error().message;
  auto names = apply_tuned(c, with_space({{"ORDER", {0, 1}}}, {}), mm, tgt);
  ASSERT_FALSE(names);
  EXPECT_NE(names.error().message.find("sets the tunables ORDER, TILE; the kernel declares ORDER"), std::string::npos)
      << names.error().message;
  target v4 = tgt;
  v4.arch = "x86-64-v4";
  auto elsewhere = apply_tuned(c, kernel, mm, v4);
  ASSERT_FALSE(elsewhere);
  EXPECT_NE(elsewhere.error().message.find("tuned on x86-64-v3"), std::string::npos) << elsewhere.error().message;
}

TEST_F(tuned_knobs, retrieval_serves_it_to_its_family_only) {
  const skill_card c = card_from_tune(win);
  retrieve_options o;
  o.admitted_only = true;  // optimize's skills strategy: a tuned card serves while a candidate
  retrieve_query q;
  q.tgt = tgt;
  q.t = &mm;
  q.tunables = &kernel.manifest.tune;
  retrieval r = retrieve({c}, q, o);
  ASSERT_EQ(r.path.size(), 1u) << (r.rejected.empty() ? "" : r.rejected.front().reason);
  EXPECT_EQ(r.path.front(), c.id);

  // A kernel without tunables, or with others: turned away at `tunables`, with the reason.
  q.tunables = nullptr;
  r = retrieve({c}, q, o);
  ASSERT_EQ(r.rejected.size(), 1u);
  EXPECT_EQ(r.rejected.front().stage, rejection_stage::tunables);
  EXPECT_NE(r.rejected.front().reason.find("declares none"), std::string::npos) << r.rejected.front().reason;
  // Another target.
  q.tunables = &kernel.manifest.tune;
  q.tgt.arch = "x86-64-v4";
  r = retrieve({c}, q, o);
  ASSERT_EQ(r.rejected.size(), 1u);
  EXPECT_EQ(r.rejected.front().stage, rejection_stage::tunables);
  // A kernel already configured with its values: present.
  q.tgt = tgt;
  auto done = configure(kernel, win.winner);
  ASSERT_TRUE(done);
  q.tunables = &done->manifest.tune;
  r = retrieve({c}, q, o);
  ASSERT_EQ(r.rejected.size(), 1u);
  EXPECT_EQ(r.rejected.front().stage, rejection_stage::present);
  // A ModelNew has no tunables to set.
  q.tunables = &kernel.manifest.tune;
  q.cand = candidate_language::modelnew;
  r = retrieve({c}, q, o);
  ASSERT_EQ(r.rejected.size(), 1u);
  EXPECT_EQ(r.rejected.front().stage, rejection_stage::language);
  // A tuned card without a configuration (hand-written, imported) serves no kernel.
  skill_card empty = c;
  empty.tuned->values.clear();
  q.cand = candidate_language::c_abi;
  q.tunables = nullptr;
  r = retrieve({empty}, q, o);
  ASSERT_EQ(r.rejected.size(), 1u);
  EXPECT_EQ(r.rejected.front().stage, rejection_stage::tunables);
  q.tunables = &kernel.manifest.tune;
  // Only lathe tune's own crown serves while a candidate: an imported tuned card (its evidence
  // dropped on import) or a hand-written one waits for admission.
  skill_card imported = c, written = c;
  imported.evidence.clear();
  written.prov = provenance{"human", "written", false};
  for (const skill_card& other : {imported, written}) {
    EXPECT_FALSE(crowned_here(other));
    r = retrieve({other}, q, o);
    ASSERT_EQ(r.rejected.size(), 1u);
    EXPECT_EQ(r.rejected.front().stage, rejection_stage::status);
    EXPECT_NE(r.rejected.front().reason.find("not admitted"), std::string::npos) << r.rejected.front().reason;
  }
  // Refused cards stay refused.
  skill_card refused = c;
  refused.status = card_status::refused;
  q.cand = candidate_language::c_abi;
  r = retrieve({refused}, q, o);
  ASSERT_EQ(r.rejected.size(), 1u);
  EXPECT_EQ(r.rejected.front().stage, rejection_stage::status);
}

// Tuning the same kernel again (review, 2026-12-07): the same values crowned keep what admission
// decided of them; other values are another card, a candidate of its own.
TEST_F(tuned_knobs, the_same_values_crowned_again_keep_what_admission_decided) {
  test::temp_dir dir;
  auto db = store::open(dir.path() / "lathe.db");
  ASSERT_TRUE(db) << db.error().message;
  const skill_card c = card_from_tune(win);
  auto first = store_tuned_card(*db, c);
  ASSERT_TRUE(first) << first.error().message;
  auto got = db->get_card(c.id);
  ASSERT_TRUE(got && *got);
  skill_card decided = **got;
  decided.status = card_status::refused;
  decided.status_reason = "reproduced on 0 of the 2 held-out tasks needed";
  ASSERT_TRUE(db->put_card(decided));
  ASSERT_TRUE(store_tuned_card(*db, card_from_tune(win)));
  auto again = db->get_card(c.id);
  ASSERT_TRUE(again && *again);
  EXPECT_EQ((*again)->status, card_status::refused);
  EXPECT_EQ((*again)->status_reason, decided.status_reason);
  tune_win other = win;
  other.winner = {{"ORDER", 0}, {"TILE", 32}};
  const skill_card o = card_from_tune(other);
  auto name = store_tuned_card(*db, o);
  ASSERT_TRUE(name) << name.error().message;
  EXPECT_NE(*name, *first);
  auto third = db->get_card(o.id);
  ASSERT_TRUE(third && *third);
  EXPECT_EQ((*third)->status, card_status::candidate);
}

// Admission's held-out rule for a tuned card compares kernels by content (issue 45): the tuned
// kernel copied under another task and name is the kernel it was tuned from, not held out; a
// member of the family with another space or another source is.
TEST_F(tuned_knobs, the_tuned_kernel_under_another_name_is_not_held_out) {
  auto def = configure(kernel, kernel.manifest.tune.defaults);
  ASSERT_TRUE(def) << def.error().message;
  win.default_hash = def->hash;
  const skill_card c = card_from_tune(win);
  EXPECT_EQ(c.id, tuned_card_id(def->hash, "x86-64-v3", win.winner));
  EXPECT_TRUE(tuned_from(c, kernel));
  test::temp_dir dir;
  const std::filesystem::path copy = dir.path() / "other_task/kernels/copied";
  std::filesystem::create_directories(copy);
  std::filesystem::copy(kernel.origin, copy);
  auto copied = load_bundle(copy);
  ASSERT_TRUE(copied) << copied.error().message;
  EXPECT_NE(copied->name, kernel.name);
  EXPECT_TRUE(tuned_from(c, *copied));
  EXPECT_FALSE(tuned_from(c, with_space({{"ORDER", {0, 1}}, {"TILE", {16, 32, 64}}}, {})));
  kernel_bundle edited = *copied;
  edited.sources.begin()->second += "\n// edited\n";
  EXPECT_FALSE(tuned_from(c, edited));
  skill_card induced = c;
  induced.tuned.reset();
  EXPECT_FALSE(tuned_from(induced, kernel));
}

TEST_F(tuned_knobs, optimize_applies_it_alone_and_mechanically_or_says_why_not) {
  test::temp_dir dir;
  auto db = store::open(dir.path() / "lathe.db");
  ASSERT_TRUE(db) << db.error().message;
  const skill_card tuned = card_from_tune(win);
  ASSERT_TRUE(db->put_card(tuned));
  skill_card omp;  // an admitted card of the rule engine, beside it
  omp.id = omp.name = "omp-card";
  omp.intent = "Add omp_parallel";
  omp.op = "gemm";
  omp.provides_features = {"omp_parallel"};
  omp.carriers["cpp/cpu"] = "#pragma omp parallel for";
  omp.declared_ratio = 1.9;
  omp.target = "x86-64-v3";
  omp.status = card_status::admitted;
  ASSERT_TRUE(db->put_card(omp));
  search::optimize_options o;
  o.strat = search::strategy::skills;
  o.tgt = tgt;
  agent::rules::rules_proposer rules;
  std::vector<std::string> offered;
  auto made = search::make_plan(mm, rules, *db, o, [&](const agent::rank_request& rq) {
    for (const auto& p : rq.paths) offered.push_back(p.id);
    return result<std::vector<std::string>>(std::vector<std::string>{tuned.id});
  });
  ASSERT_TRUE(made) << made.error().message;
  search::plan& plan = **made;

  auto first = plan.next(kernel, {}, "cpu", {}, {}, {});
  ASSERT_TRUE(first) << first.error().message;
  // Both cards offered, each alone: a tuned card joins no planned combination.
  EXPECT_EQ(offered.size(), 2u);
  for (const auto& id : offered) EXPECT_NE(id.rfind("plan:", 0), 0u) << id;
  EXPECT_EQ(first->op, "configure");
  EXPECT_EQ(first->source, "card:" + tuned.name);
  EXPECT_EQ(first->card_ids, std::vector<std::string>{tuned.id});
  auto got = first->call();  // mechanical: no proposer call
  ASSERT_TRUE(got) << got.error().message;
  auto want = configure(kernel, win.winner);
  ASSERT_TRUE(want);
  EXPECT_EQ(got->kernel.hash, want->hash);
  EXPECT_EQ(got->prov.kind, "rules");
  EXPECT_EQ(got->prov.detail, "tune");
  EXPECT_TRUE(got->prov.mechanical);
  plan.proposed(*first, kernel);
  auto second = plan.next(kernel, {}, "cpu", {}, {}, {});
  ASSERT_TRUE(second) << second.error().message;
  EXPECT_EQ(second->source, "card:omp-card");  // tried once per best kernel

  // A kernel of the family whose space lacks TILE = 64: the request refuses, with the reason.
  kernel_bundle narrow = with_space({{"ORDER", {0, 1}}, {"TILE", {16, 32}}}, {});
  narrow.hash = "narrow";
  auto third = plan.next(narrow, {}, "cpu", {}, {}, {});
  ASSERT_TRUE(third) << third.error().message;
  ASSERT_EQ(third->op, "configure");
  auto refused = third->call();
  ASSERT_FALSE(refused);
  EXPECT_EQ(refused.error().kind, agent::failure_kind::refused);
  EXPECT_NE(refused.error().message.find("TILE = 64 is outside the kernel's declared values (16, 32)"), std::string::npos)
      << refused.error().message;
}

}  // namespace
