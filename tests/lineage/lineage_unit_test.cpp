// lineage/ without the gate: the feature audit, the invariants, the run log's replay, the staged
// scorer, the delegation tables, ids.
#include <gtest/gtest.h>

#include <regex>

#include "core/test_util.h"
#include "core/text.h"
#include "agent/rules/rules_proposer.h"
#include "lineage/decompose.h"
#include "lineage/init.h"
#include "features/feature_audit.h"
#include "lineage/run_log.h"
#include "lineage/screening.h"
#include "lineage/staged.h"

namespace lathe::lineages {
namespace {

feature f(const std::string& name, const std::string& locus,
          detection_method m = detection_method::source) {
  feature x;
  x.name = name;
  x.locus = locus;
  x.method = m;
  return x;
}

// ---- the feature audit ------------------------------------------------------------------------

const std::vector<feature> expert = {f("omp_parallel", "launch", detection_method::disassembly),
                                     f("simd", "row", detection_method::disassembly),
                                     f("restrict", "micro"), f("loop_unroll", "micro/k")};

std::vector<feature> without(std::vector<feature> fs, const std::string& key) {
  std::erase_if(fs, [&](const feature& x) { return feature_key(x) == key; });
  return fs;
}

TEST(audit, exactly_the_claimed_feature_gone_is_removed) {
  const auto pred = without(expert, "omp_parallel@launch");
  const step_audit a = audit_step({"omp_parallel"}, expert, pred);
  EXPECT_EQ(a.kind, audit_kind::removed) << a.reason;
  ASSERT_EQ(a.removed.size(), 1u);
  EXPECT_EQ(feature_key(a.removed[0]), "omp_parallel@launch");
}

TEST(audit, another_feature_gone_too_is_a_mismatch_naming_it) {
  auto pred = without(without(expert, "omp_parallel@launch"), "restrict@micro");
  const step_audit a = audit_step({"omp_parallel"}, expert, pred);
  EXPECT_EQ(a.kind, audit_kind::mismatch);
  EXPECT_NE(a.reason.find("also removed restrict @ micro"), std::string::npos) << a.reason;
  EXPECT_TRUE(a.removed.empty());
}

TEST(audit, a_feature_that_appears_is_a_mismatch) {
  auto pred = without(expert, "omp_parallel@launch");
  pred.push_back(f("loop_unroll", "micro/n"));
  const step_audit a = audit_step({"omp_parallel"}, expert, pred);
  EXPECT_EQ(a.kind, audit_kind::mismatch);
  EXPECT_NE(a.reason.find("added loop_unroll @ micro/n"), std::string::npos) << a.reason;
}

TEST(audit, the_claimed_name_moving_to_another_locus_is_a_mismatch) {
  auto pred = without(expert, "loop_unroll@micro/k");
  pred.push_back(f("loop_unroll", "micro/n"));
  EXPECT_EQ(audit_step({"loop_unroll"}, expert, pred).kind, audit_kind::mismatch);
}

TEST(audit, artifact_detections_are_compared_by_name_since_inlining_moves_them) {
  // Taking an OpenMP region away lets the compiler inline `row` into `launch`: the packed
  // arithmetic is then found there. Not a mechanism removed.
  auto pred = without(without(expert, "omp_parallel@launch"), "simd@row");
  pred.push_back(f("simd", "launch", detection_method::disassembly));
  EXPECT_EQ(audit_step({"omp_parallel"}, expert, pred).kind, audit_kind::removed);
  EXPECT_EQ(audit_key(pred.back()), "simd@*");
  EXPECT_EQ(audit_key(f("restrict", "micro")), "restrict@micro");
  // Gone from every function: removed, and named once.
  const step_audit gone = audit_step({"omp_parallel"}, expert, without(without(expert, "omp_parallel@launch"), "simd@row"));
  EXPECT_EQ(gone.kind, audit_kind::mismatch);
  EXPECT_NE(gone.reason.find("also removed simd"), std::string::npos) << gone.reason;
}

TEST(audit, nothing_gone_is_partial_and_a_claim_the_kernel_lacks_is_a_mismatch) {
  const step_audit same = audit_step({"restrict"}, expert, expert);
  EXPECT_EQ(same.kind, audit_kind::partial);
  EXPECT_NE(same.reason.find("still present"), std::string::npos);
  const step_audit lacks = audit_step({"wgmma"}, expert, expert);
  EXPECT_EQ(lacks.kind, audit_kind::mismatch);
  EXPECT_NE(lacks.reason.find("does not hold"), std::string::npos);
  EXPECT_EQ(audit_step({}, expert, expert).kind, audit_kind::mismatch);
}

TEST(audit, a_mechanism_with_two_names_must_lose_both) {
  std::vector<feature> succ = expert;
  succ.push_back(f("vector_access", "row"));
  const auto both = without(without(succ, "simd@row"), "vector_access@row");
  EXPECT_EQ(audit_step({"simd", "vector_access"}, succ, both).kind, audit_kind::removed);
  const step_audit one = audit_step({"simd", "vector_access"}, succ, without(succ, "simd@row"));
  EXPECT_EQ(one.kind, audit_kind::mismatch);
  EXPECT_NE(one.reason.find("vector_access is still present"), std::string::npos) << one.reason;
}

TEST(audit, compiler_made_features_are_notes_not_failures) {
  // Written lists exclude the simd the compiler made on its own; the full lists show it go.
  const std::vector<feature> succ_all = {f("restrict", "micro"), f("simd", "pack", detection_method::disassembly)};
  const std::vector<feature> succ = {f("restrict", "micro")};
  const step_audit a = audit_step({"restrict"}, succ, {}, succ_all, {});
  EXPECT_EQ(a.kind, audit_kind::removed) << a.reason;
  ASSERT_EQ(a.notes.size(), 1u);
  EXPECT_NE(a.notes[0].find("compiler-made simd @ pack went away"), std::string::npos) << a.notes[0];
}

TEST(audit, written_features_keep_source_and_audit_and_named_artifact_detections) {
  // simd on the artifact with no intrinsics or pragma in the source: the compiler's own work.
  // smem_tiling on the PTX that the source detector missed: no compiler invents a tile.
  const std::vector<feature> all = {f("simd", "a", detection_method::disassembly),
                                    f("omp_parallel", "b", detection_method::disassembly),
                                    f("online_softmax", "c", detection_method::proposer_audit),
                                    f("restrict", "d"), f("smem_tiling", "k", detection_method::ptx),
                                    f("read_only_load", "k", detection_method::ptx)};
  const auto w = written_features(all, {"omp_parallel", "restrict"});
  std::vector<std::string> keys;
  for (const auto& x : w) keys.push_back(feature_key(x));
  EXPECT_EQ(keys, (std::vector<std::string>{"omp_parallel@b", "online_softmax@c", "restrict@d", "smem_tiling@k"}));
  EXPECT_EQ(written_features(all, {"simd"}).size(), 5u);
}

// ---- invariants -------------------------------------------------------------------------------

lineage chain() {
  lineage l;
  l.id = "t/abc/decompose-x";
  l.kernels = {"k0", "k1", "k2"};
  l.features = {{f("restrict", "m")}, {f("restrict", "m"), f("loop_unroll", "m/k")},
                {f("restrict", "m"), f("loop_unroll", "m/k"), f("omp_parallel", "l")}};
  transition a, b;
  a.from_kernel = "k0", a.to_kernel = "k1", a.added = {f("loop_unroll", "m/k")};
  b.from_kernel = "k1", b.to_kernel = "k2", b.added = {f("omp_parallel", "l")};
  l.steps = {a, b};
  return l;
}

TEST(invariants, a_consistent_chain_has_none) { EXPECT_TRUE(check_invariants(chain()).empty()); }

TEST(invariants, each_violation_is_named) {
  lineage l = chain();
  l.kernels.push_back("k3");
  auto v = check_invariants(l);
  EXPECT_FALSE(v.empty());
  EXPECT_NE(join(v, "\n").find("kernels.size() 4 != steps.size() + 1 (3)"), std::string::npos) << join(v, "\n");

  l = chain();
  l.steps[1].from_kernel = "k0";
  v = check_invariants(l);
  ASSERT_FALSE(v.empty());
  EXPECT_NE(v[0].find("steps[1].from_kernel k0 != kernels[1] k1"), std::string::npos) << v[0];

  l = chain();
  l.steps[0].added.clear();
  l.steps[0].removed = {f("restrict", "m")};
  v = check_invariants(l);
  ASSERT_EQ(v.size(), 2u) << join(v, "\n");
  EXPECT_NE(v[0].find("steps[0].added {}"), std::string::npos) << v[0];
  EXPECT_NE(v[1].find("steps[0].removed {restrict@m}"), std::string::npos) << v[1];

  l = chain();
  l.features.pop_back();
  EXPECT_NE(join(check_invariants(l), "\n").find("features.size() 2 != kernels.size() 3"), std::string::npos);
}

// ---- the run log ------------------------------------------------------------------------------

TEST(run_log, replay_rebuilds_the_walk_from_the_bodies) {
  kernel_bundle expert;
  expert.name = "expert";
  expert.hash = "ffee";
  std::vector<run_event> ev;
  auto add = [&](const char* kind, std::string body) {
    run_event e;
    e.seq = static_cast<int64_t>(ev.size()) + 1;
    e.kind = kind;
    e.json = std::move(body);
    ev.push_back(e);
  };
  add(event_kind::started, started_body("gemm", expert, 7, "gemm/ffee/r", {f("restrict", "m")}));
  rejected_attempt r1;
  r1.step = 1, r1.attempt = 1, r1.stage = "gate", r1.summary = "x: gate wrong_result", r1.outcome = "wrong_result";
  add(event_kind::backward_rejected, rejected_body(r1));
  accepted_step a;
  a.step = 1;
  a.tr.from_kernel = "k0", a.tr.to_kernel = "ffee", a.tr.action = "restrict.remove";
  a.tr.added = {f("restrict", "m")};
  a.tr.speedup = 1.25;
  a.claimed = {f("restrict", "m")};
  a.predecessor_name = "expert~1";
  add(event_kind::backward_accepted, accepted_body(a));
  rejected_attempt r2 = r1;
  r2.step = 2;
  add(event_kind::backward_rejected, rejected_body(r2));
  forward_result fr;
  fr.status = forward_status::identity_roundtrip;
  fr.kernel = "ffee";
  add(event_kind::forward, forward_body(1, fr, "{\"rule\":\"restrict.add\"}"));

  auto s = replay(ev);
  ASSERT_TRUE(s) << s.error().message;
  EXPECT_TRUE(s->started);
  EXPECT_EQ(s->check_id, 7);
  ASSERT_EQ(s->expert_features.size(), 1u);
  ASSERT_EQ(s->accepted.size(), 1u);
  EXPECT_EQ(s->accepted[0].tr.from_kernel, "k0");
  EXPECT_EQ(*s->accepted[0].tr.speedup, 1.25);
  EXPECT_EQ(s->accepted[0].claimed[0].name, "restrict");
  EXPECT_EQ(s->rejected.size(), 2u);
  ASSERT_EQ(s->pending().size(), 1u);  // step 2's rejection: the current step's notes
  EXPECT_EQ(s->pending()[0].step, 2);
  EXPECT_EQ(s->forwards.at(1).status, forward_status::identity_roundtrip);
  EXPECT_EQ(s->invocations.at(1), "{\"rule\":\"restrict.add\"}");
  EXPECT_FALSE(s->backward_done);
  EXPECT_FALSE(s->finished);
  EXPECT_EQ(s->last_seq, 5);

  // A second acceptance of step 1 (a repeated step) does not replay.
  ev.insert(ev.begin() + 3, ev[2]);
  auto bad = replay(ev);
  ASSERT_FALSE(bad);
  EXPECT_NE(bad.error().message.find("out of order"), std::string::npos);
}

TEST(run_log, backward_end_round_trips) {
  backward_end e;
  e.term = termination::rejection_limit;
  e.reason = "4 consecutive";
  e.remaining = {"simd"};
  run_event ev{1, "", event_kind::backward_finished, backward_end_body(e)};
  auto s = replay({ev});
  ASSERT_TRUE(s && s->backward_done);
  EXPECT_EQ(s->backward_done->term, termination::rejection_limit);
  EXPECT_EQ(s->backward_done->remaining, std::vector<std::string>{"simd"});
}

// ---- the staged scorer ------------------------------------------------------------------------

TEST(staged, a_transition_counts_when_the_walk_removed_all_its_names) {
  const std::vector<stage> stages = {
      {"naive", {f("restrict", "k")}},
      {"s1", {f("restrict", "k"), f("smem_tiling", "k")}},
      {"s2", {f("restrict", "k"), f("smem_tiling", "k"), f("mma_sync", "k"), f("ldmatrix", "k")}},
      {"expert", {f("restrict", "k"), f("smem_tiling", "k"), f("mma_sync", "k"), f("ldmatrix", "k"),
                  f("launch_bounds", "k")}}};
  lineage walk;
  transition a, b;
  a.added = {f("mma_sync", "k")};
  b.added = {f("launch_bounds", "k")};
  walk.steps = {a, b};
  const stage_score s = score_against_stages(stages, walk);
  ASSERT_EQ(s.transitions.size(), 3u);
  EXPECT_EQ(s.recovered, 1);  // s2 -> expert: launch_bounds
  EXPECT_EQ(s.partial, 1);    // s1 -> s2: mma_sync, not ldmatrix
  EXPECT_EQ(s.transitions[1].recovered, std::vector<std::string>{"mma_sync"});
  EXPECT_EQ(s.walk_removed, (std::vector<std::string>{"launch_bounds", "mma_sync"}));
  // With the staged lineage's own vocabulary, launch_bounds is no stage's mechanism.
  const stage_score v = score_against_stages(stages, walk, {"smem_tiling", "mma_sync", "ldmatrix"});
  EXPECT_EQ(v.recovered, 0);
  EXPECT_TRUE(v.transitions[2].expected.empty());
  EXPECT_NE(v.describe().find("recovered 0 of 3 stage transitions (1 partly)"), std::string::npos) << v.describe();
}

// ---- delegation tables, ids -------------------------------------------------------------------

TEST(screening, symbols_and_sonames_name_their_library) {
  EXPECT_EQ(library_of_symbol("cblas_sgemm"), "openblas");
  EXPECT_EQ(library_of_symbol("sgemm_"), "blas");
  EXPECT_EQ(library_of_symbol("cublasLtMatmul"), "cublas");
  EXPECT_EQ(library_of_symbol("cudnnConvolutionForward"), "cudnn");
  EXPECT_EQ(library_of_symbol("_ZN2at6native3addEv"), "torch");
  EXPECT_EQ(library_of_symbol("at::Tensor::add"), "torch");
  EXPECT_EQ(library_of_symbol("micro_6x16"), "");
  EXPECT_EQ(library_of_symbol("sgemm_kernel"), "");  // only the Fortran entry points
  EXPECT_EQ(library_of_soname("libopenblas.so.0"), "openblas");
  EXPECT_EQ(library_of_soname("libcublasLt.so.13"), "cublas");
  EXPECT_EQ(library_of_soname("libtorch_cpu.so"), "torch");
  EXPECT_EQ(library_of_soname("libgomp.so.1"), "");
}

TEST(ids, run_and_lineage_ids_have_their_forms) {
  const std::string id = new_run_id();
  EXPECT_TRUE(std::regex_match(id, std::regex(R"(decompose-\d{8}-\d{6}-[0-9a-f]{4})"))) << id;
  EXPECT_EQ(lineage_id("gemm", "2f5a9002312a77e0", "decompose-1"), "gemm/2f5a9002312a/decompose-1");
}

}  // namespace
}  // namespace lathe::lineages

namespace lathe::lineages {
namespace {

// A verifier that must never be asked: a held-out task is refused before anything is gated.
class never_asked final : public verifier {
 public:
  evaluation check(const task&, const kernel_bundle&, const kernel_bundle&, const provenance&) override {
    ADD_FAILURE() << "check asked";
    return {};
  }
  evaluation compare(const task&, const kernel_bundle&, const kernel_bundle&, const provenance&) override {
    ADD_FAILURE() << "compare asked";
    return {};
  }
  agent::rules::detections features(const task&, const kernel_bundle&) override {
    ADD_FAILURE() << "features asked";
    return {};
  }
  result<std::filesystem::path> object(const task&, const kernel_bundle&) override {
    return fail(errc::unsupported, "never");
  }
};

TEST(roles, init_and_decompose_refuse_a_held_out_task) {
  task t;
  t.name = "silu";
  t.role = task_role::heldout;
  kernel_bundle k;
  never_asked v;
  agent::rules::rules_proposer p;
  test::temp_dir dir;
  auto db = store::open(dir / "lathe.db");
  ASSERT_TRUE(db) << db.error().message;
  auto c = init_expert(t, k, v, p, *db, {});
  ASSERT_FALSE(c);
  EXPECT_NE(c.error().message.find("held out"), std::string::npos) << c.error().message;
  auto d = decompose(t, k, v, p, *db, {});
  ASSERT_FALSE(d);
  EXPECT_NE(d.error().message.find("held out"), std::string::npos) << d.error().message;
}

}  // namespace
}  // namespace lathe::lineages
