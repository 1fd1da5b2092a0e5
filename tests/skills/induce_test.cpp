// Induction's rules (skills/induce.h) on small hand-made lineages in a real store, with a proposer
// whose claims are scripted: grouping across lineages and tasks, one abstraction per carrier key,
// the contract taken from the evidence (claims the evidence contradicts are dropped and logged),
// constraints kept only when they parse, stable ids and names, status kept or reset on re-induction,
// and groups without a task skipped with the reason. The real-step version is library_test.cpp.
#include <gtest/gtest.h>
#include <stdlib.h>

#include <algorithm>
#include <cmath>
#include <filesystem>

#include "core/hash.h"
#include "skills/constraints.h"
#include "skills/induce.h"

using namespace lathe;
using namespace lathe::skills;

namespace {

class scripted final : public agent::proposer {
 public:
  skill_card claim;
  std::vector<agent::card_request> asked;

  provenance origin() const override { return {"human", "scripted", false}; }
  agent::op_result<skill_card> abstract_card(const agent::card_request& r) override {
    asked.push_back(r);
    skill_card c = claim;
    c.carriers[r.t->plat == platform::cuda ? "cuda/cuda" : "cpp/cpu"] = "carrier from " + r.t->name;
    return c;
  }
  agent::op_result<agent::proposal> propose_backward(const agent::backward_request&) override { return no(); }
  agent::op_result<agent::proposal> rederive_forward(const agent::forward_request&) override { return no(); }
  agent::op_result<agent::audit_result> audit_features(const agent::audit_request&) override {
    return tl::unexpected(agent::failure{agent::failure_kind::unsupported, "scripted"});
  }
  agent::op_result<agent::proposal> materialize(const agent::materialize_request&) override { return no(); }
  agent::op_result<agent::proposal> repair(const agent::repair_request&) override { return no(); }
  agent::op_result<agent::proposal> seed_baseline(const agent::seed_request&) override { return no(); }
  agent::op_result<agent::ranking> rank_paths(const agent::rank_request&) override {
    return tl::unexpected(agent::failure{agent::failure_kind::unsupported, "scripted"});
  }
  agent::op_result<agent::proposal> mutate(const agent::mutate_request&) override { return no(); }

 private:
  static agent::op_result<agent::proposal> no() {
    return tl::unexpected(agent::failure{agent::failure_kind::unsupported, "scripted"});
  }
};

task make_task(const std::string& name, const std::string& op, platform p, dtype in, dtype out) {
  task t;
  t.name = name;
  t.op = op;
  t.plat = p;
  t.inputs = {{"A", in, {{"M", 0}}, {}}};
  t.outputs = {{"C", out, {{"M", 0}}, {}}};
  t.shapes = {{"small", {{"M", 8}}, false}, {"main", {{"M", 4096}}, true}};
  return t;
}

std::vector<feature> fs(std::initializer_list<const char*> names) {
  std::vector<feature> out;
  for (const char* n : names) out.push_back({"f", n, {}, detection_method::source});
  return out;
}

class skills_induce_unit : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/lathe-induce-test-XXXXXX";
    dir_ = mkdtemp(tmpl);
    auto s = store::open(dir_ / "lathe.db");
    ASSERT_TRUE(s) << s.error().message;
    db_.emplace(std::move(*s));
    tasks_ = {make_task("ta", "gemm", platform::cpu, dtype::f32, dtype::f32),
              make_task("tb", "conv2d", platform::cpu, dtype::f32, dtype::f32),
              make_task("tc", "gemm", platform::cuda, dtype::bf16, dtype::f32)};
    // ta: k0 {restrict} -simd-> k1 {restrict, simd} -omp-> k2 {restrict, simd, omp_parallel}
    a_ = chain("ta", "x86-64-v3", {fs({"restrict"}), fs({"restrict", "simd"}), fs({"restrict", "simd", "omp_parallel"})});
    a_.steps[0] = step("simd.remove", "f/k", fs({"simd"}), {}, 2.0, 1, forward_status::accepted);
    a_.steps[1] = step("omp_parallel.remove", "f", fs({"omp_parallel"}), {}, 1.8, 2, forward_status::accepted);
    // tb: m0 {simd, vector_access} -omp-> m1 (another function name: the same locus signature)
    b_ = chain("tb", "x86-64-v3", {fs({"simd", "vector_access"}), fs({"simd", "vector_access", "omp_parallel"})});
    b_.steps[0] = step("remove_omp_parallel", "g", fs({"omp_parallel"}), {}, 1.6, 3, forward_status::identity_roundtrip);
    // tc (CUDA): mma.sync replaced by wgmma, whose re-derivation was rejected.
    c_ = chain("tc", "sm_90a", {fs({"smem_tiling", "mma_sync"}), fs({"smem_tiling", "wgmma"})}, language::cuda);
    c_.steps[0] = step("wgmma", "kern/k", fs({"wgmma"}), fs({"mma_sync"}), 1.5, 4, forward_status::rejected);
    c_.steps[0].forward.reason = "slower than its successor beyond the noise";
    // td: no task given for it.
    d_ = chain("td", "x86-64-v3", {fs({}), fs({"loop_unroll"})});
    d_.steps[0] = step("loop_unroll.remove", "f/k", fs({"loop_unroll"}), {}, 1.2, 5, forward_status::accepted);

    p_.claim.intent = "parallelize";
    p_.claim.anchor = "the outer loop";
    p_.claim.preconditions = {"iterations independent"};
    p_.claim.risk = "races";
    p_.claim.scope = "loops";
    p_.claim.effect = "faster";
    p_.claim.requires_features = {"restrict", "vector_access"};
    p_.claim.provides_features = {"omp_parallel", "fast_math"};
    p_.claim.conflicts_features = {"simd"};
    p_.claim.constraints = {{"capability", "avx2"}, {"colour", "red"}};
    p_.claim.prov = {"human", "scripted", false};
  }
  void TearDown() override {
    db_.reset();
    std::error_code ec;
    std::filesystem::remove_all(dir_, ec);
  }

  lineage chain(const std::string& task_name, const std::string& arch, std::vector<std::vector<feature>> states,
                language lang = language::cpp) {
    lineage l;
    l.task = task_name;
    for (const auto& t : tasks_)
      if (t.name == task_name) l.op = t.op;
    l.target = arch;
    l.id = task_name + "/lineage/run";
    for (size_t i = 0; i < states.size(); ++i) {
      kernel_bundle k;
      k.name = task_name + "_k" + std::to_string(i);
      k.manifest.lang = lang;
      k.manifest.isa = arch;
      k.sources["k.cpp"] = "// " + k.name + "\n";
      k.hash = content_hash(k.name);
      EXPECT_TRUE(db_->put_kernel(k));
      l.kernels.push_back(k.hash);
    }
    l.features = std::move(states);
    l.steps.resize(l.kernels.size() - 1);
    for (size_t i = 0; i + 1 < l.kernels.size(); ++i) {
      l.steps[i].from_kernel = l.kernels[i];
      l.steps[i].to_kernel = l.kernels[i + 1];
    }
    return l;
  }
  transition step(const std::string& action, const std::string& locus, std::vector<feature> added,
                  std::vector<feature> removed, double speedup, int64_t eval, forward_status fwd) {
    transition s;
    s.action = action;
    s.locus = locus;
    s.added = std::move(added);
    s.removed = std::move(removed);
    s.speedup = speedup;
    s.evaluations = {eval};
    s.forward.status = fwd;
    return s;
  }
  // from_kernel/to_kernel were set by chain(); step() replaces the transition: put them back.
  void link(lineage& l) {
    for (size_t i = 0; i + 1 < l.kernels.size(); ++i) {
      l.steps[i].from_kernel = l.kernels[i];
      l.steps[i].to_kernel = l.kernels[i + 1];
    }
  }
  std::vector<lineage> all() {
    for (auto* l : {&a_, &b_, &c_, &d_}) link(*l);
    return {a_, b_, c_, d_};
  }
  const skill_card* find(const induction& r, const std::string& provides) {
    for (const auto& c : r.cards)
      if (c.provides_features == std::vector<std::string>{provides}) return &c;
    return nullptr;
  }
  static bool logged(const skill_card& c, const std::string& text) {
    for (const auto& l : c.verification_log)
      if (l.find(text) != std::string::npos) return true;
    return false;
  }

  std::filesystem::path dir_;
  std::optional<store> db_;
  std::vector<task> tasks_;
  lineage a_, b_, c_, d_;
  scripted p_;
};

}  // namespace

TEST(skills_induce_names, categories_signatures_names_and_ids) {
  EXPECT_EQ(action_category("omp_parallel.remove"), "omp_parallel");
  EXPECT_EQ(action_category("remove_cp_async_pipeline"), "cp_async_pipeline");
  EXPECT_EQ(action_category("Add-Loop-Unroll"), "loop_unroll");
  EXPECT_EQ(locus_signature("gemm_kernel"), "function");
  EXPECT_EQ(locus_signature("gemm_kernel/k/j"), "loop");
  EXPECT_EQ(locus_signature("<flags>"), "kernel");
  EXPECT_EQ(locus_signature(""), "kernel");
  EXPECT_EQ(kebab("omp_parallel-function"), "omp-parallel-function");
  EXPECT_EQ(kebab("  Weird__Name!! "), "weird-name");
  EXPECT_LE(kebab(std::string(100, 'a')).size(), 64u);
  transition s;
  s.action = "omp_parallel.remove";
  s.locus = "gemm/i";
  s.added = fs({"omp_parallel"});
  const group_key k = key_of(s);
  EXPECT_EQ(k.text(), "omp_parallel|loop|+omp_parallel|-");
  s.locus = "softmax/r";  // another kernel's names, the same signature: the same card
  EXPECT_EQ(card_id_of(key_of(s)), card_id_of(k));
  EXPECT_EQ(card_id_of(k).size(), 16u);
  s.locus = "softmax";
  EXPECT_NE(card_id_of(key_of(s)), card_id_of(k));
  EXPECT_EQ(mechanism_needs("cp_async_pipeline"), std::vector<std::string>{"smem_tiling"});
  EXPECT_TRUE(mechanism_needs("omp_parallel").empty());
}

TEST_F(skills_induce_unit, groups_steps_and_takes_the_contract_from_the_evidence) {
  // A card already named like one induction will make: the name is taken, the new card gets -2.
  skill_card squatter;
  squatter.id = "someone-else";
  squatter.name = "simd-loop";
  ASSERT_TRUE(db_->put_card(squatter));

  induce_options o;
  o.tasks = tasks_;
  auto r = induce_report(all(), *db_, p_, o);
  ASSERT_TRUE(r) << r.error().message;
  EXPECT_EQ(r->cards.size(), 3u);
  EXPECT_EQ(r->proposer_calls, 3);  // omp (one carrier key for two tasks), simd, wgmma
  ASSERT_EQ(r->skipped.size(), 1u);
  EXPECT_NE(r->skipped[0].reason.find("no task given for td"), std::string::npos) << r->skipped[0].reason;

  const skill_card* omp = find(*r, "omp_parallel");
  ASSERT_TRUE(omp);
  EXPECT_EQ(omp->name, "omp-parallel-function");
  EXPECT_EQ(omp->sources, (std::vector<std::string>{"ta/lineage/run#1", "tb/lineage/run#0"}));
  EXPECT_EQ(omp->source_tasks, (std::vector<std::string>{"ta", "tb"}));
  EXPECT_EQ(omp->evidence, (std::vector<int64_t>{2, 3}));
  ASSERT_TRUE(omp->declared_ratio);
  EXPECT_NEAR(*omp->declared_ratio, std::sqrt(1.8 * 1.6), 1e-12);
  EXPECT_EQ(omp->carriers.size(), 1u);
  EXPECT_EQ(omp->carriers.at("cpp/cpu"), "carrier from ta");  // the re-derived step represents
  EXPECT_EQ(omp->shape, (std::map<std::string, int64_t>{{"M", 4096}}));
  EXPECT_EQ(omp->target, "x86-64-v3");
  EXPECT_EQ(omp->prov.detail, "scripted");
  // The claims the evidence contradicts are gone, and the log says why.
  EXPECT_TRUE(omp->requires_features.empty());
  EXPECT_TRUE(omp->conflicts_features.empty());
  EXPECT_TRUE(logged(*omp, "requires 'restrict' dropped"));      // tb's kernel had no restrict
  EXPECT_TRUE(logged(*omp, "requires 'vector_access' dropped")); // ta's kernel had none
  EXPECT_TRUE(logged(*omp, "conflicts 'simd' dropped: present together"));
  EXPECT_TRUE(logged(*omp, "provides 'fast_math' dropped"));
  EXPECT_TRUE(logged(*omp, "constraint colour=red"));
  EXPECT_TRUE(logged(*omp, "present before every step (observed, not required unless needed): simd"));
  ASSERT_EQ(omp->constraints.size(), 1u);
  EXPECT_EQ(constraint_text(omp->constraints[0]), "capability=avx2");
  bool prose = false;
  for (const auto& pre : omp->preconditions) prose |= pre.find("[constraint capability=avx2]") != std::string::npos;
  EXPECT_TRUE(prose);
  EXPECT_FALSE(logged(*omp, "identity_roundtrip only"));  // ta's step was re-derived

  const skill_card* simd = find(*r, "simd");
  ASSERT_TRUE(simd);
  EXPECT_EQ(simd->name, "simd-loop-2");
  EXPECT_EQ(simd->requires_features, std::vector<std::string>{"restrict"});  // claimed and attested

  const skill_card* wg = find(*r, "wgmma");
  ASSERT_TRUE(wg);
  EXPECT_EQ(wg->carriers.count("cuda/cuda"), 1u);
  EXPECT_EQ(wg->requires_features, std::vector<std::string>{"smem_tiling"});  // wgmma needs it
  EXPECT_EQ(wg->conflicts_features, std::vector<std::string>{"mma_sync"});    // replaced, never together
  EXPECT_TRUE(logged(*wg, "conflicts 'simd' dropped: no step of the group replaced it"));
  EXPECT_TRUE(logged(*wg, "forward re-derivation rejected at tc/lineage/run#0: slower"));
  EXPECT_TRUE(logged(*wg, "forward: not re-derived"));
  auto has = [&](const constraint& k) {
    return std::any_of(wg->constraints.begin(), wg->constraints.end(),
                       [&](const constraint& c) { return c.what == k.what && c.value == k.value; });
  };
  EXPECT_TRUE(has({"capability", "wgmma"}));
  EXPECT_TRUE(has({"isa", "sm_90a"}));
  for (const auto& c : r->cards) {
    auto stored = db_->get_card(c.id);
    ASSERT_TRUE(stored && *stored);
    EXPECT_EQ((*stored)->name, c.name);
    EXPECT_EQ((*stored)->status, card_status::candidate);
  }
  // Identity-only groups say so.
  b_.steps[0].action = "omp_parallel.remove";
  b_.steps[0].locus = "g/r";
  auto only_b = induce_report({b_}, *db_, p_, o);
  ASSERT_TRUE(only_b) << only_b.error().message;
  ASSERT_EQ(only_b->cards.size(), 1u);
  EXPECT_EQ(only_b->cards[0].name, "omp-parallel-loop");
  EXPECT_TRUE(logged(only_b->cards[0], "identity_roundtrip only"));
}

// A card learned on a KernelBench problem (issue 44, item 3): the problem's operator is its file's
// stem, related to nothing, so the card carries its Model's operator family instead; its evidence
// was measured on C-ABI kernels and says so.
TEST_F(skills_induce_unit, a_card_learned_on_a_problem_carries_its_models_operator_family) {
  task kb = make_task("25_Swish", "25_Swish", platform::cpu, dtype::f32, dtype::f32);
  kb.problem = "/problems/25_Swish.py";
  kb.problem_model = R"({"forward": [{"input": 0}], "state": [], "ops": ["mul", "sigmoid"]})";
  tasks_.push_back(kb);
  lineage l = chain("25_Swish", "x86-64-v3", {fs({}), fs({"omp_parallel"})});
  EXPECT_EQ(l.op, "25_Swish");
  l.steps[0] = step("omp_parallel.remove", "f", fs({"omp_parallel"}), {}, 1.7, 9, forward_status::accepted);
  link(l);
  induce_options o;
  o.tasks = tasks_;
  auto r = induce_report({l}, *db_, p_, o);
  ASSERT_TRUE(r) << r.error().message;
  ASSERT_EQ(r->cards.size(), 1u);
  EXPECT_EQ(r->cards[0].op, "elementwise");
  EXPECT_EQ(r->cards[0].source_tasks, std::vector<std::string>{"25_Swish"});
  EXPECT_EQ(r->cards[0].evidence_lang, candidate_language::c_abi);
  // A task's own operator is kept.
  link(a_);
  auto plain = induce_report({a_}, *db_, p_, o);
  ASSERT_TRUE(plain) << plain.error().message;
  ASSERT_FALSE(plain->cards.empty());
  for (const auto& c : plain->cards) EXPECT_EQ(c.op, "gemm") << c.name;
}

TEST_F(skills_induce_unit, evidence_accumulates_and_admission_stands_only_on_the_same_evidence) {
  induce_options o;
  o.tasks = tasks_;
  const auto lineages = all();
  ASSERT_TRUE(db_->put_lineage(lineages[0]));  // ta's lineage, as decompose stores it
  auto first = induce_report(lineages, *db_, p_, o);
  ASSERT_TRUE(first) << first.error().message;
  skill_card omp = *find(*first, "omp_parallel");
  omp.status = card_status::admitted;
  omp.status_reason = "reproduced on 2 held-out tasks";
  ASSERT_TRUE(db_->put_card(omp));

  // tb alone: ta's step comes back from the stored card and the stored lineage.
  auto again = induce_report({lineages[1]}, *db_, p_, o);
  ASSERT_TRUE(again) << again.error().message;
  ASSERT_EQ(again->cards.size(), 1u);
  EXPECT_EQ(again->cards[0].id, omp.id);
  EXPECT_EQ(again->cards[0].name, omp.name);
  EXPECT_EQ(again->cards[0].sources.size(), 2u);
  EXPECT_EQ(again->cards[0].status, card_status::admitted);  // same evidence: the admission stands

  // Without the stored evidence the card changes, and its admission no longer stands.
  o.merge_stored = false;
  auto narrower = induce_report({lineages[1]}, *db_, p_, o);
  ASSERT_TRUE(narrower) << narrower.error().message;
  EXPECT_EQ(narrower->cards[0].sources.size(), 1u);
  EXPECT_EQ(narrower->cards[0].status, card_status::candidate);
  EXPECT_TRUE(logged(narrower->cards[0], "status reset to candidate"));
}
