// decompose with the rule engine on each shipped CPU expert, through the real gate (issue 6):
// the lineage invariants, termination and remaining features as the engine's coverage predicts
// (docs/rules.md "Coverage on the shipped experts"), each accepted step's feature really gone
// from the predecessor's detections, forward results recorded; and a run killed after its first
// accepted step, resumed, giving the uninterrupted run's kernel chain.
#include <chrono>
#include <cstdio>
#include <algorithm>
#include <set>

#include "agent/rules/catalog.h"

#include "lineage_fixture.h"

namespace lathe::lineage_test {
namespace {

using lineages::decompose;
using lineages::decompose_options;
using lineages::decompose_result;

// What the rule engine's catalog predicts for each expert (docs/rules.md "Coverage on the shipped
// experts", and the catalog as it stands: simd_intrinsics.remove, where the catalog has it, takes
// the x86 intrinsics out as one mechanism with two names, simd and vector_access).
struct coverage {
  std::set<std::string> removed;    // written names of the expert that K0 no longer writes
  std::set<std::string> remaining;  // written names left when the walk ends
  termination term = termination::unknown;
};

coverage predicted(const std::string& task) {
  const bool intrinsics = agent::rules::find_rule("simd_intrinsics.remove") != nullptr;
  coverage c;
  if (task == "softmax") c.removed = {"omp_parallel"};
  if (task == "gemm") c.removed = {"omp_parallel", "restrict"};
  if (task == "conv2d") {
    c.removed = {"loop_unroll", "omp_parallel", "restrict"};
    // No rule removes a register tile, so the walk ends with it. The intrinsics step keeps the
    // tile: the source detector counts lathe's stand-in type (lathe_m256 acc[6][2]) as a tile
    // element, as it counts __m256.
    c.remaining = {"register_tiling"};
    if (intrinsics) c.removed.insert({"simd", "vector_access"});
    else c.remaining.insert({"simd", "vector_access"});
    return c;
  }
  if (intrinsics) {
    c.removed.insert({"simd", "vector_access"});
    c.term = termination::complete;
  } else {
    c.remaining = {"simd", "vector_access"};
  }
  return c;
}

void print(const decompose_result& r, double seconds) {
  std::printf("\n%s: %s (%s) in %.1f s, %zu step(s), remaining [%s]\n", r.l.id.c_str(),
              to_string(r.l.term), r.l.reason.c_str(), seconds, r.l.steps.size(),
              join(r.l.remaining_features, ", ").c_str());
  for (size_t i = 0; i < r.l.steps.size(); ++i) {
    const transition& s = r.l.steps[i];
    std::vector<std::string> added;
    for (const auto& f : s.added) added.push_back(lineages::feature_text(f));
    std::printf("  [%zu] %s @ %s adds {%s} speedup %s forward %s (%s) rejected %zu\n", i, s.action.c_str(),
                s.locus.c_str(), join(added, ", ").c_str(),
                s.speedup ? std::to_string(*s.speedup).c_str() : "-", to_string(s.forward.status),
                s.forward.reason.c_str(), s.rejected.size());
    for (const auto& x : s.rejected) std::printf("      rejected: %s\n", x.c_str());
  }
}

class decompose_rules : public lineage_env {
 protected:
  decompose_result run_rules(const task& t, const kernel_bundle& expert, decompose_options o) {
    agent::rules::rules_proposer rules(agent::rules::options_for(t));
    const auto t0 = std::chrono::steady_clock::now();
    o.progress = [t0](const lineages::decompose_progress& p) {
      std::printf("  %6.1f s  %s\n", std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count(),
                  p.message.c_str());
    };
    auto r = decompose(t, expert, *verifier_, rules, *db_, o);
    EXPECT_TRUE(r) << (r ? "" : r.error().message);
    if (!r) return {};
    print(*r, std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
    return *r;
  }

  // What every rules lineage must satisfy.
  std::set<std::string> written(const task& t, const kernel_bundle& k) {
    std::set<std::string> out;
    const auto all = lineages::features_of(verifier_->features(t, k));
    for (const auto& f : lineages::written_features(all, lineages::written_names(k))) out.insert(f.name);
    return out;
  }

  void expect_sound(const task& t, const decompose_result& r) {
    const coverage c = predicted(t.name);
    const lineage& l = r.l;
    EXPECT_TRUE(lineages::check_invariants(l).empty()) << join(lineages::check_invariants(l), "\n");
    EXPECT_EQ(l.kernels.back(), r.check.kernel);
    EXPECT_EQ(l.term, c.term) << l.reason;
    if (c.term == termination::unknown)
      EXPECT_NE(l.reason.find("features it could not touch"), std::string::npos) << l.reason;
    else
      EXPECT_NE(l.reason.find("no written mechanism is left"), std::string::npos) << l.reason;
    EXPECT_EQ(std::set<std::string>(l.remaining_features.begin(), l.remaining_features.end()), c.remaining);
    // The walk removed exactly what the coverage predicts: the expert's written names that the
    // first kernel of the lineage no longer writes, detected again here.
    const std::set<std::string> at_expert = written(t, shipped_kernel(t, "expert"));
    const std::set<std::string> at_k0 = written(t, stored(l.kernels.front()));
    std::set<std::string> removed;
    for (const auto& n : at_expert)
      if (!at_k0.count(n)) removed.insert(n);
    EXPECT_EQ(removed, c.removed);
    EXPECT_EQ(at_k0, c.remaining);
    // The stored lineage is the returned one.
    auto got = db_->get_lineage(l.id);
    ASSERT_TRUE(got && *got);
    EXPECT_EQ((*got)->kernels, l.kernels);
    EXPECT_EQ((*got)->term, l.term);

    // Each step's claimed feature, detected again from the built kernels: present in the
    // successor, gone from the predecessor, at its locus.
    const std::vector<std::vector<feature>> claims = claimed(r.r.id);
    ASSERT_EQ(claims.size(), l.steps.size());
    for (size_t b = 0; b < claims.size(); ++b) {
      const transition& s = l.steps[l.steps.size() - 1 - b];  // backward step b+1
      // Written features only: a name the source no longer writes is gone even where the
      // compiler vectorizes a plain loop on its own (feature_audit.h).
      auto keys = [&](const std::string& hash) {
        std::set<std::string> out;
        const kernel_bundle k = hash == r.check.kernel ? shipped_kernel(t, "expert") : stored(hash);
        const auto all = lineages::features_of(verifier_->features(t, k));
        for (const auto& f : lineages::written_features(all, lineages::written_names(k)))
          out.insert(lineages::audit_key(f));
        return out;
      };
      const auto succ = keys(s.to_kernel), pred = keys(s.from_kernel);
      ASSERT_FALSE(claims[b].empty()) << "step " << b + 1;
      for (const auto& c : claims[b]) {
        const std::string key = lineages::audit_key(c);  // an artifact detection: by name
        EXPECT_TRUE(succ.count(key)) << key << " not in the successor of step " << b + 1;
        EXPECT_FALSE(pred.count(key)) << key << " still in the predecessor of step " << b + 1;
      }
      EXPECT_EQ(s.prov.kind, "rules");
      EXPECT_TRUE(s.prov.mechanical);
      EXPECT_FALSE(s.edit.empty());
      EXPECT_GE(s.evaluations.size(), 1u);
      // Forward: recorded for every step, never not_tried.
      EXPECT_NE(s.forward.status, forward_status::not_tried) << s.forward.reason;
      EXPECT_FALSE(s.forward.reason.empty());
      if (s.forward.status == forward_status::identity_roundtrip) {
        EXPECT_EQ(s.forward.kernel, s.to_kernel);
        EXPECT_TRUE(s.forward.prov.mechanical);
      }
    }
    auto run = db_->get_run(r.r.id);
    ASSERT_TRUE(run && *run);
    EXPECT_EQ((*run)->state, run_state::finished);
  }
};

TEST_F(decompose_rules, softmax_runs_init_then_walks_timed_and_rederives_forward) {
  const task t = small_softmax();
  const kernel_bundle expert = shipped_kernel(t, "expert");
  decompose_options o;
  o.max_steps = 6;
  const decompose_result r = run_rules(t, expert, o);
  ASSERT_FALSE(r.l.id.empty());
  // init ran: the gate, a re-measure in a fresh evaluation, both faster than the naive baseline
  // beyond the A/A margin; features with their methods; the audit asked about the rest.
  EXPECT_TRUE(r.ran_init);
  EXPECT_TRUE(r.check.accepted) << r.check.reason;
  EXPECT_NE(r.check.reason.find("re-measured in a fresh evaluation"), std::string::npos) << r.check.reason;
  EXPECT_GE(r.check.evaluations.size(), 2u);
  ASSERT_TRUE(r.check.ratio && r.check.remeasured_ratio);
  EXPECT_GT(*r.check.ratio, 1.05);
  EXPECT_GT(*r.check.remeasured_ratio, 1.05);
  EXPECT_TRUE(r.check.findings.empty());  // libgomp is no delegation
  EXPECT_TRUE(std::any_of(r.check.features.begin(), r.check.features.end(), [](const feature& f) {
    return f.name == "omp_parallel" && f.method == detection_method::disassembly;
  }));
  EXPECT_NE(std::find(r.check.unknown_features.begin(), r.check.unknown_features.end(), "online_softmax"),
            r.check.unknown_features.end());
  auto stored_check = db_->latest_expert_check(t.name, expert.hash);
  ASSERT_TRUE(stored_check && *stored_check);
  EXPECT_TRUE((*stored_check)->accepted);
  expect_sound(t, r);
  ASSERT_GE(r.l.steps.size(), 1u);
  for (const auto& s : r.l.steps) {
    EXPECT_TRUE(s.speedup.has_value());  // timed: check + compare
    EXPECT_EQ(s.evaluations.size(), 2u);
  }
  if (agent::rules::find_rule("simd_intrinsics.remove")) {
    // The intrinsics step was timed against a real difference (de-vectorized softmax is several
    // times slower), and its forward rule is the exact inverse: an identity round trip.
    const transition& simd = r.l.steps.back();  // the walk's first step
    EXPECT_EQ(simd.action, "simd_intrinsics.remove");
    ASSERT_TRUE(simd.speedup);
    EXPECT_GT(*simd.speedup, 2.0);
    EXPECT_EQ(simd.forward.status, forward_status::identity_roundtrip) << simd.forward.reason;
    EXPECT_FALSE(simd.invocation.empty());  // the forward rule's carrier
  }
}

TEST_F(decompose_rules, gemm_walk_is_the_engines_coverage_and_one_mechanism_may_take_several_edits) {
  const task t = shipped("gemm");
  const kernel_bundle expert = shipped_kernel(t, "expert");
  seed_check(t, expert);
  decompose_options o;
  o.time = false;
  const decompose_result r = run_rules(t, expert, o);
  ASSERT_FALSE(r.l.id.empty());
  EXPECT_FALSE(r.ran_init);
  expect_sound(t, r);
  // micro_6x16's three __restrict__ parameters are one mechanism (restrict @ micro_6x16): the
  // rule removes one per edit, and the step is the chain of three, gated once.
  const auto it = std::find_if(r.l.steps.begin(), r.l.steps.end(),
                               [](const transition& s) { return s.action == "restrict.remove"; });
  ASSERT_NE(it, r.l.steps.end());
  EXPECT_EQ(it->evaluations.size(), 1u);  // one check; timing off
  bool three = false;
  for (const auto& e : events(r.r.id))
    if (e.kind == lineages::event_kind::backward_accepted && e.json.find("removed in 3 edits") != std::string::npos)
      three = true;
  EXPECT_TRUE(three);
}

TEST_F(decompose_rules, conv2d_walk_is_the_engines_coverage) {
  const task t = shipped("conv2d");
  const kernel_bundle expert = shipped_kernel(t, "expert");
  seed_check(t, expert);
  decompose_options o;
  o.time = false;
  o.max_steps = 20;
  const decompose_result r = run_rules(t, expert, o);
  ASSERT_FALSE(r.l.id.empty());
  expect_sound(t, r);
}

// Killed after its first accepted step (the progress callback throws, as a kill would stop it
// there), then resumed: no accepted step lost or repeated, and the kernel chain of an
// uninterrupted run.
TEST_F(decompose_rules, a_run_killed_after_its_first_step_resumes_to_the_uninterrupted_chain) {
  const task t = shipped("gemm");
  const kernel_bundle expert = shipped_kernel(t, "expert");
  seed_check(t, expert);
  agent::rules::rules_proposer rules(agent::rules::options_for(t));
  decompose_options o;
  o.time = false;
  o.forward = false;
  auto whole = decompose(t, expert, *verifier_, rules, *db_, o);
  ASSERT_TRUE(whole) << whole.error().message;
  ASSERT_GE(whole->l.steps.size(), 2u) << "a kill after the first step must leave work to resume";

  struct killed : std::runtime_error {
    using std::runtime_error::runtime_error;
  };
  std::string run_id;
  decompose_options k = o;
  k.progress = [&](const lineages::decompose_progress& p) {
    run_id = p.run_id;
    if (p.kind == lineages::event_kind::backward_accepted) throw killed("killed after step " + std::to_string(p.step));
  };
  EXPECT_THROW((void)decompose(t, expert, *verifier_, rules, *db_, k), killed);
  ASSERT_FALSE(run_id.empty());
  auto after_kill = db_->get_run(run_id);
  ASSERT_TRUE(after_kill && *after_kill);
  EXPECT_EQ((*after_kill)->state, run_state::interrupted);
  const std::string lid = lineages::lineage_id(t.name, expert.hash, run_id);
  auto partial = db_->get_lineage(lid);
  ASSERT_TRUE(partial && *partial);
  EXPECT_EQ((*partial)->steps.size(), 1u);  // the accepted step is stored with its event
  EXPECT_TRUE(lineages::check_invariants(**partial).empty());

  decompose_options resume;
  resume.resume_run = run_id;
  auto resumed = decompose(t, expert, *verifier_, rules, *db_, resume);
  ASSERT_TRUE(resumed) << resumed.error().message;
  EXPECT_TRUE(resumed->resumed);
  EXPECT_EQ(resumed->r.id, run_id);
  EXPECT_EQ(resumed->r.state, run_state::finished);
  EXPECT_EQ(resumed->l.id, lid);
  EXPECT_EQ(resumed->l.kernels, whole->l.kernels);
  EXPECT_EQ(resumed->l.term, whole->l.term);
  EXPECT_TRUE(lineages::check_invariants(resumed->l).empty());
  EXPECT_EQ(resumed->l.steps.front().forward.status, forward_status::not_tried);  // its own options: forward off

  // Every step accepted exactly once, in order; the resume is an event of the same run.
  std::vector<int> steps;
  int resumes = 0;
  for (const auto& e : events(run_id)) {
    if (e.kind == lineages::event_kind::backward_accepted)
      steps.push_back(nlohmann::json::parse(e.json).at("step").get<int>());
    if (e.kind == lineages::event_kind::resumed) ++resumes;
  }
  std::vector<int> want(whole->l.steps.size());
  for (size_t i = 0; i < want.size(); ++i) want[i] = static_cast<int>(i) + 1;
  EXPECT_EQ(steps, want);
  EXPECT_EQ(resumes, 1);

  // Resuming a finished run changes nothing.
  const size_t n = events(run_id).size();
  auto again = decompose(t, expert, *verifier_, rules, *db_, resume);
  ASSERT_TRUE(again) << again.error().message;
  EXPECT_EQ(again->l.kernels, whole->l.kernels);
  EXPECT_EQ(events(run_id).size(), n);

  // A run id of another task or expert is refused, with the reason.
  auto other = decompose(shipped("softmax"), expert, *verifier_, rules, *db_, resume);
  ASSERT_FALSE(other);
  EXPECT_NE(other.error().message.find("decomposes gemm"), std::string::npos) << other.error().message;
}

}  // namespace
}  // namespace lathe::lineage_test
