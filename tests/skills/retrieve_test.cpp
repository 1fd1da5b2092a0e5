// Retrieval and constraints (skills/retrieve.h, skills/constraints.h) on hand-built cards and
// targets: the grammar, explained rejections (constraint, value, target), the sm_80 refusal of a
// wgmma card validated on sm_90a, operator ranking (same, related, other) and cross-operator
// retrieval, and the path through requires / provides / conflicts.
#include <gtest/gtest.h>

#include <algorithm>

#include "skills/constraints.h"
#include "skills/retrieve.h"

using namespace lathe;
using namespace lathe::skills;

namespace {

target cpu_v3() {
  target t;
  t.plat = platform::cpu;
  t.arch = "x86-64-v3";
  t.device = "test CPU";
  t.capabilities = {"avx", "avx2", "fma"};
  return t;
}

// Built by hand as the brief of retrieval asks: what lathe-probe-cuda would read on an A100
// (gate/gpu_target.cpp's capabilities for compute capability 8.0) and on an H100.
target sm(int major, int minor, const std::string& name, std::vector<std::string> caps) {
  target t;
  t.plat = platform::cuda;
  t.arch = "sm_" + std::to_string(major * 10 + minor) + (major >= 9 ? "a" : "");
  t.device = name;
  t.cc_major = major;
  t.cc_minor = minor;
  t.smem_optin_bytes = major >= 9 ? 232448 : 166912;
  t.capabilities = std::move(caps);
  return t;
}
target sm80() { return sm(8, 0, "NVIDIA A100", {"bf16", "cp.async", "ldmatrix", "mma.sync"}); }
target sm90a() {
  return sm(9, 0, "NVIDIA H100", {"bf16", "cluster", "cp.async", "fp8", "ldmatrix", "mma.sync", "setmaxnreg", "tma", "wgmma"});
}

skill_card card(const std::string& id, const std::string& op, std::vector<std::string> provides,
                double ratio, const std::string& carrier = "cpp/cpu") {
  skill_card c;
  c.id = id;
  c.name = id;
  c.op = op;
  c.provides_features = std::move(provides);
  c.declared_ratio = ratio;
  c.carriers[carrier] = "diff";
  c.status = card_status::admitted;
  c.target = carrier == "cuda/cuda" ? "sm_90a" : "x86-64-v3";
  return c;
}

task row_task(const std::string& name, const std::string& op, int64_t rows, int64_t cols) {
  task t;
  t.name = name;
  t.op = op;
  t.role = task_role::heldout;
  t.inputs = {{"X", dtype::f32, {{"R", 0}, {"C", 0}}, {}}};
  t.outputs = {{"Y", dtype::f32, {{"R", 0}, {"C", 0}}, {}}};
  t.shapes = {{"small", {{"R", 3}, {"C", 7}}, false}, {"main", {{"R", rows}, {"C", cols}}, true}};
  return t;
}

std::vector<std::string> ids(const retrieval& r) {
  std::vector<std::string> out;
  for (const auto& x : r.ranked) out.push_back(x.card.id);
  return out;
}

const rejection* rejected(const retrieval& r, const std::string& id) {
  for (const auto& x : r.rejected)
    if (x.card_id == id) return &x;
  return nullptr;
}

}  // namespace

TEST(skills_constraints, grammar) {
  EXPECT_FALSE(grammar_problem({"capability", "cp.async"}));
  EXPECT_FALSE(grammar_problem({"smem_bytes", "49152"}));
  EXPECT_FALSE(grammar_problem({"dtype", "f32"}));
  EXPECT_FALSE(grammar_problem({"alignment", "16"}));
  EXPECT_FALSE(grammar_problem({"divisibility", "N%4"}));
  EXPECT_FALSE(grammar_problem({"isa", "x86-64-v3"}));
  EXPECT_FALSE(grammar_problem({"isa", "sm_90a"}));
  EXPECT_TRUE(grammar_problem({"colour", "red"}));
  EXPECT_TRUE(grammar_problem({"capability", "Tensor Cores"}));
  EXPECT_TRUE(grammar_problem({"smem_bytes", "48K"}));
  EXPECT_TRUE(grammar_problem({"dtype", "float33"}));
  EXPECT_TRUE(grammar_problem({"alignment", "12"}));
  EXPECT_TRUE(grammar_problem({"divisibility", "N/4"}));
  EXPECT_TRUE(grammar_problem({"divisibility", "N%0"}));
  EXPECT_TRUE(grammar_problem({"isa", "hopper"}));
  // An unreadable constraint fails its check: it is never taken on faith.
  auto f = check({"smem_bytes", "lots"}, sm90a(), nullptr);
  ASSERT_TRUE(f);
  EXPECT_NE(f->reason.find("unreadable"), std::string::npos);
}

TEST(skills_constraints, checks_name_the_constraint_value_and_target) {
  const target a100 = sm80(), h100 = sm90a(), cpu = cpu_v3();
  auto f = check({"capability", "wgmma"}, a100, nullptr);
  ASSERT_TRUE(f);
  EXPECT_EQ(f->what.value, "wgmma");
  EXPECT_EQ(f->target, "sm_80 (NVIDIA A100)");
  EXPECT_NE(f->reason.find("lacks capability wgmma"), std::string::npos) << f->reason;
  EXPECT_FALSE(check({"capability", "wgmma"}, h100, nullptr));
  EXPECT_FALSE(check({"isa", "sm_80"}, h100, nullptr));
  EXPECT_TRUE(check({"isa", "sm_90a"}, a100, nullptr));
  EXPECT_TRUE(check({"isa", "sm_90a"}, sm(10, 0, "B200", {}), nullptr));  // arch-specific: exactly 9.0
  EXPECT_TRUE(check({"isa", "sm_80"}, cpu, nullptr));
  EXPECT_FALSE(check({"isa", "x86-64-v2"}, cpu, nullptr));
  EXPECT_TRUE(check({"isa", "x86-64-v4"}, cpu, nullptr));
  EXPECT_FALSE(check({"smem_bytes", "200000"}, h100, nullptr));
  EXPECT_TRUE(check({"smem_bytes", "200000"}, a100, nullptr));
  EXPECT_TRUE(check({"smem_bytes", "1024"}, cpu, nullptr));
  EXPECT_FALSE(check({"alignment", "16"}, cpu, nullptr));   // ABI v1: 256-byte aligned tensors
  EXPECT_TRUE(check({"alignment", "512"}, cpu, nullptr));
  const task t = row_task("rows", "softmax", 4096, 1023);
  EXPECT_FALSE(check({"dtype", "f32"}, cpu, &t));
  f = check({"dtype", "bf16"}, cpu, &t);
  ASSERT_TRUE(f);
  EXPECT_NE(f->reason.find("tensor 'X' is"), std::string::npos) << f->reason;
  EXPECT_FALSE(check({"dtype", "bf16"}, cpu, nullptr));  // a task property: no task, not decided
  EXPECT_FALSE(check({"divisibility", "R%1"}, cpu, &t));
  f = check({"divisibility", "C%4"}, cpu, &t);
  ASSERT_TRUE(f);
  EXPECT_NE(f->reason.find("shape set 'small' has C = 7"), std::string::npos) << f->reason;
  f = check({"divisibility", "K%4"}, cpu, &t);
  ASSERT_TRUE(f);
  EXPECT_NE(f->reason.find("binds no K"), std::string::npos) << f->reason;
}

TEST(skills_retrieve, wgmma_card_validated_on_sm90a_is_refused_on_sm80_with_the_reason) {
  // The card lists no constraint at all (a model forgot them): wgmma implies them.
  skill_card w = card("wgmma-k-loop", "gemm", {"wgmma"}, 1.6, "cuda/cuda");
  w.requires_features = {"smem_tiling"};
  EXPECT_TRUE(recheck(w, sm90a()).empty());
  const auto fails = recheck(w, sm80());
  ASSERT_FALSE(fails.empty());
  EXPECT_EQ(fails[0].what.what, "capability");
  EXPECT_EQ(fails[0].what.value, "wgmma");
  EXPECT_EQ(fails[0].target, "sm_80 (NVIDIA A100)");
  EXPECT_EQ(fails.size(), 2u);  // and isa sm_90a

  task g = row_task("gemm_bf16", "gemm", 4096, 4096);
  retrieve_query q;
  q.lang = language::cuda;
  q.tgt = sm80();
  q.t = &g;
  q.features = {"smem_tiling"};
  retrieval r = retrieve({w}, q);
  EXPECT_TRUE(r.ranked.empty());
  const rejection* why = rejected(r, "wgmma-k-loop");
  ASSERT_TRUE(why);
  EXPECT_EQ(why->stage, rejection_stage::constraint);
  ASSERT_TRUE(why->failed);
  EXPECT_EQ(why->failed->what.value, "wgmma");
  EXPECT_EQ(why->failed->target, "sm_80 (NVIDIA A100)");
  EXPECT_NE(why->reason.find("capability=wgmma fails on sm_80"), std::string::npos) << why->reason;
  q.tgt = sm90a();
  r = retrieve({w}, q);
  EXPECT_EQ(ids(r), std::vector<std::string>{"wgmma-k-loop"});
}

TEST(skills_retrieve, filters_by_platform_language_and_status) {
  skill_card omp = card("omp", "gemm", {"omp_parallel"}, 1.8);
  skill_card smem = card("smem", "gemm", {"smem_tiling"}, 3.0, "cuda/cuda");
  skill_card unroll_cuda = card("unroll-cuda", "gemm", {"loop_unroll"}, 1.2, "cuda/cuda");
  skill_card unroll_rules = card("unroll-rules", "gemm", {"loop_unroll"}, 1.1, "rules");
  skill_card refused = card("refused", "gemm", {"restrict"}, 1.1);
  refused.status = card_status::refused;
  refused.status_reason = "reproduced on 0 of the 2 held-out tasks needed";
  skill_card candidate = card("candidate", "gemm", {"simd"}, 1.5);
  candidate.status = card_status::candidate;
  const task t = row_task("silu", "silu", 4096, 2048);
  retrieve_query q;
  q.tgt = cpu_v3();
  q.t = &t;
  const std::vector<skill_card> all = {omp, smem, unroll_cuda, unroll_rules, refused, candidate};
  retrieval r = retrieve(all, q);
  EXPECT_EQ(rejected(r, "smem")->stage, rejection_stage::platform);
  EXPECT_NE(rejected(r, "smem")->reason.find("smem_tiling"), std::string::npos);
  EXPECT_EQ(rejected(r, "unroll-cuda")->stage, rejection_stage::language);
  EXPECT_NE(rejected(r, "unroll-cuda")->reason.find("no carrier for cpp/cpu"), std::string::npos);
  EXPECT_EQ(rejected(r, "refused")->stage, rejection_stage::status);
  EXPECT_NE(rejected(r, "refused")->reason.find("0 of the 2"), std::string::npos);
  EXPECT_FALSE(rejected(r, "unroll-rules"));  // a rule invocation is replayed on any language
  EXPECT_FALSE(rejected(r, "candidate"));
  r = retrieve(all, q, {.admitted_only = true});
  EXPECT_EQ(rejected(r, "candidate")->stage, rejection_stage::status);
  // Cards found on gemm serve silu: operator ranks, it does not filter.
  EXPECT_NE(std::find(r.path.begin(), r.path.end(), "omp"), r.path.end());
}

TEST(skills_retrieve, same_operator_first_then_related_then_others) {
  // Equal gains: the operator decides. A larger gain does not lift an unrelated card over a
  // related one (tiers are 4 apart, gain and shape at most 1.5).
  skill_card same = card("from-layernorm", "layernorm", {"simd"}, 1.3);
  skill_card related = card("from-softmax", "softmax", {"omp_parallel"}, 1.3);
  skill_card other = card("from-gemm", "gemm", {"restrict"}, 3.9);
  const task t = row_task("layernorm", "layernorm", 4096, 1024);
  retrieve_query q;
  q.tgt = cpu_v3();
  q.t = &t;
  const retrieval r = retrieve({other, related, same}, q);
  EXPECT_EQ(ids(r), (std::vector<std::string>{"from-layernorm", "from-softmax", "from-gemm"}));
  EXPECT_EQ(r.ranked[0].score.rel, op_relation::same);
  EXPECT_EQ(r.ranked[1].score.rel, op_relation::related);
  EXPECT_EQ(r.ranked[2].score.rel, op_relation::other);
  EXPECT_GT(r.ranked[2].score.gain, r.ranked[0].score.gain);
  EXPECT_EQ(relation("gemm", "conv2d"), op_relation::related);
  EXPECT_EQ(relation("rmsnorm", "mean"), op_relation::related);
  EXPECT_EQ(relation("relu", "silu"), op_relation::related);
  EXPECT_EQ(relation("transpose", "gemm"), op_relation::other);
  EXPECT_EQ(relation("my_op", "my_op"), op_relation::same);

  // Within a tier: measured gains (reproduced trials count), then shape proximity.
  skill_card small_gain = card("small-gain", "softmax", {"loop_unroll"}, 1.1);
  skill_card big_gain = card("big-gain", "softmax", {"restrict"}, 1.1);
  card_trial tr;
  tr.verdict = trial_verdict::reproduced;
  tr.ratio = 2.5;
  big_gain.trials = {tr};
  const retrieval g = retrieve({small_gain, big_gain}, q);
  EXPECT_EQ(ids(g), (std::vector<std::string>{"big-gain", "small-gain"}));
  skill_card near = card("near", "softmax", {"loop_unroll"}, 1.5);
  near.shape = {{"R", 4096}, {"C", 1024}};
  skill_card far = card("far", "softmax", {"restrict"}, 1.5);
  far.shape = {{"R", 16}, {"C", 16}};
  const retrieval s = retrieve({far, near}, q);
  EXPECT_EQ(ids(s), (std::vector<std::string>{"near", "far"}));
  EXPECT_DOUBLE_EQ(s.ranked[0].score.shape, 1.0);
  EXPECT_LT(s.ranked[1].score.shape, 0.5);
}

// A KernelBench problem's operator is its Model's ops (issue 44, item 3): its task's operator is
// the file's stem, related to nothing, so without the ops every card ranked `other`.
task problem(const std::string& stem, const std::string& ops) {
  task t = row_task(stem, stem, 128, 4096);
  t.problem = "/problems/" + stem + ".py";
  t.problem_model = R"({"init": [], "forward": [{"input": 0}], "state": [], "ops": )" + ops + "}";
  return t;
}

TEST(skills_retrieve, a_problem_ranks_cards_by_its_models_operator_family) {
  skill_card silu = card("from-silu", "silu", {"omp_parallel"}, 1.3);
  skill_card gemm = card("from-gemm", "gemm", {"simd"}, 1.3);
  skill_card mean = card("from-mean", "mean", {"restrict"}, 1.3);
  skill_card topk = card("from-topk", "topk", {"loop_unroll"}, 3.9);
  retrieve_query q;
  q.tgt = cpu_v3();
  // Swish (x * sigmoid(x)): elementwise, the SiLU card's family.
  const task swish = problem("25_Swish", R"(["mul", "sigmoid"])");
  q.t = &swish;
  retrieval r = retrieve({topk, gemm, mean, silu}, q);
  ASSERT_EQ(ids(r).size(), 4u);
  EXPECT_EQ(ids(r).front(), "from-silu");
  EXPECT_EQ(r.ranked[0].score.rel, op_relation::same);
  for (size_t i = 1; i < 4; ++i) EXPECT_EQ(r.ranked[i].score.rel, op_relation::other) << r.ranked[i].card.id;
  // Linear, divide, sigmoid, scale, row sum: a gemm problem whose epilogue is elementwise and a
  // reduction. The gemm card is its family's; SiLU's and the mean's serve the epilogue; top-k none.
  const task level2 = problem("1_Gemm_Divide_Sigmoid_Scale_Sum", R"(["addmm", "div", "mul", "sigmoid", "sum"])");
  q.t = &level2;
  r = retrieve({topk, silu, mean, gemm}, q);
  EXPECT_EQ(ids(r).front(), "from-gemm");
  EXPECT_EQ(r.ranked[0].score.rel, op_relation::same);
  EXPECT_EQ(relation_to("silu", level2), op_relation::related);
  EXPECT_EQ(relation_to("mean", level2), op_relation::related);
  EXPECT_EQ(relation_to("conv2d", level2), op_relation::related);  // another contraction
  EXPECT_EQ(relation_to("topk", level2), op_relation::other);
  EXPECT_EQ(relation_to("softmax", level2), op_relation::other);
  EXPECT_EQ(ids(r).back(), "from-topk");
  // A problem whose ops were not recorded, and any other task, keep the operator's relation.
  const task unread = problem("4_Bad_Init", "[]");
  EXPECT_EQ(relation_to("silu", unread), op_relation::other);
  EXPECT_EQ(relation_to("4_Bad_Init", unread), op_relation::same);
  EXPECT_EQ(relation_to("relu", row_task("silu", "silu", 4, 4)), op_relation::related);
  EXPECT_EQ(relation_to("25_Swish", swish), op_relation::same);  // a card learned on the problem itself
}

TEST(skills_retrieve, a_modelnew_takes_a_c_abi_cards_code_but_no_rule_invocation) {
  skill_card cpp = card("cpp-omp", "silu", {"omp_parallel"}, 1.8);  // mined from a C-ABI lineage
  skill_card rules_only = card("rules-simd", "silu", {"simd"}, 1.4, "rules");
  skill_card python = card("python-restrict", "silu", {"restrict"}, 1.2, "python/cpu");
  skill_card cuda = card("cuda-unroll", "silu", {"loop_unroll"}, 1.2, "cuda/cuda");
  const task swish = problem("25_Swish", R"(["mul", "sigmoid"])");
  retrieve_query q;
  q.tgt = cpu_v3();
  q.t = &swish;
  q.lang = language::python;
  q.cand = candidate_language::modelnew;
  const std::vector<skill_card> all = {cpp, rules_only, python, cuda};
  const retrieval r = retrieve(all, q);
  EXPECT_NE(std::find(r.path.begin(), r.path.end(), "cpp-omp"), r.path.end());
  EXPECT_NE(std::find(r.path.begin(), r.path.end(), "python-restrict"), r.path.end());
  ASSERT_TRUE(rejected(r, "rules-simd"));
  EXPECT_EQ(rejected(r, "rules-simd")->stage, rejection_stage::language);
  EXPECT_NE(rejected(r, "rules-simd")->reason.find("a rules carrier replays on C-ABI bundles only"), std::string::npos)
      << rejected(r, "rules-simd")->reason;
  ASSERT_TRUE(rejected(r, "cuda-unroll"));
  EXPECT_NE(rejected(r, "cuda-unroll")->reason.find("takes cpp/cpu into its inline extension"), std::string::npos)
      << rejected(r, "cuda-unroll")->reason;
  // The same library for a C-ABI kernel of the task: the rule invocation serves, Python does not.
  q.lang = language::cpp;
  q.cand = candidate_language::c_abi;
  const retrieval c = retrieve(all, q);
  EXPECT_FALSE(rejected(c, "rules-simd"));
  ASSERT_TRUE(rejected(c, "python-restrict"));
  EXPECT_EQ(rejected(c, "python-restrict")->stage, rejection_stage::language);
}

TEST(skills_retrieve, path_follows_features_requires_and_conflicts) {
  skill_card smem = card("smem", "gemm", {"smem_tiling"}, 2.0, "cuda/cuda");
  skill_card cp = card("cp-async", "gemm", {"cp_async_pipeline"}, 1.4, "cuda/cuda");
  cp.requires_features = {"smem_tiling"};
  skill_card mma = card("mma", "gemm", {"mma_sync"}, 3.5, "cuda/cuda");
  skill_card wg = card("wgmma", "gemm", {"wgmma"}, 1.5, "cuda/cuda");
  wg.requires_features = {"smem_tiling"};
  wg.conflicts_features = {"mma_sync"};
  skill_card warp = card("warp-spec", "gemm", {"warp_specialization"}, 1.2, "cuda/cuda");
  warp.requires_features = {"tma"};
  task g = row_task("gemm_bf16", "gemm", 4096, 4096);
  retrieve_query q;
  q.lang = language::cuda;
  q.tgt = sm90a();
  q.t = &g;
  q.features = {"vector_access"};
  retrieval r = retrieve({cp, wg, smem, mma, warp}, q);
  // smem_tiling first (cp-async needs it); mma (the larger gain) blocks wgmma; nothing gives tma.
  EXPECT_EQ(r.path, (std::vector<std::string>{"mma", "smem", "cp-async"}));
  for (const auto& x : r.ranked) {
    if (x.card.id == "cp-async") {
      EXPECT_EQ(x.after, std::vector<std::string>{"smem"});
    }
  }
  ASSERT_TRUE(rejected(r, "wgmma"));
  EXPECT_EQ(rejected(r, "wgmma")->stage, rejection_stage::conflict);
  EXPECT_NE(rejected(r, "wgmma")->reason.find("mma_sync (brought by card mma)"), std::string::npos);
  ASSERT_TRUE(rejected(r, "warp-spec"));
  EXPECT_EQ(rejected(r, "warp-spec")->stage, rejection_stage::requires_unmet);
  EXPECT_NE(rejected(r, "warp-spec")->reason.find("requires tma"), std::string::npos);

  // From a kernel that already tiles in shared memory: smem is skipped, cp-async comes at once.
  q.features = {"smem_tiling", "mma_sync"};
  r = retrieve({cp, wg, smem, mma}, q);
  EXPECT_EQ(r.path, std::vector<std::string>{"cp-async"});
  EXPECT_EQ(rejected(r, "smem")->stage, rejection_stage::present);
  EXPECT_EQ(rejected(r, "mma")->stage, rejection_stage::present);
  EXPECT_EQ(rejected(r, "wgmma")->stage, rejection_stage::conflict);
  EXPECT_NE(rejected(r, "wgmma")->reason.find("the kernel has it"), std::string::npos);
}

TEST(skills_constraints, derived_from_a_step_and_implied_by_features) {
  task t = row_task("gemm_bf16", "gemm", 64, 64);
  kernel_bundle before, after;
  before.manifest.lang = after.manifest.lang = language::cpp;
  before.manifest.isa = "x86-64-v2";
  after.manifest.isa = "x86-64-v3";
  before.sources["k.cpp"] = "for (...) c += a * b;";
  after.sources["k.cpp"] = "__m256 v = _mm256_fmadd_ps(a, b, c);";
  const auto got = derive_constraints(before, after, t, {{"f/k", "simd", {{"width", "256"}}, {}}}, 0);
  auto has = [&](const std::string& w, const std::string& v) {
    return std::any_of(got.begin(), got.end(), [&](const constraint& c) { return c.what == w && c.value == v; });
  };
  EXPECT_TRUE(has("isa", "x86-64-v3"));
  EXPECT_TRUE(has("capability", "avx2"));
  EXPECT_TRUE(has("capability", "fma"));
  EXPECT_TRUE(has("dtype", "float32"));  // the task files' spelling
  EXPECT_FALSE(has("capability", "avx512f"));
  for (const auto& c : got) EXPECT_FALSE(grammar_problem(c)) << constraint_text(c);

  kernel_bundle cb = before, ca = after;
  cb.manifest.lang = ca.manifest.lang = language::cuda;
  cb.manifest.isa = ca.manifest.isa = "sm_90a";
  cb.sources["k.cu"] = "float4 x;";
  ca.sources["k.cu"] = "asm(\"cp.async.cg.shared.global [%0], [%1], 16;\");";
  const auto cuda = derive_constraints(cb, ca, t, {{"k", "cp_async_pipeline", {}, {}}, {"k", "vector_access", {{"width", "128"}}, {}}}, 32768);
  auto has_c = [&](const std::string& w, const std::string& v) {
    return std::any_of(cuda.begin(), cuda.end(), [&](const constraint& c) { return c.what == w && c.value == v; });
  };
  EXPECT_TRUE(has_c("capability", "cp.async"));
  EXPECT_TRUE(has_c("alignment", "16"));
  EXPECT_TRUE(has_c("smem_bytes", "32768"));
  EXPECT_FALSE(has_c("isa", "sm_90a"));  // the step did not change the architecture
}
