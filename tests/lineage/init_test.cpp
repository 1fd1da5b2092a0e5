// lathe init through the real gate (issue 6, item 1): an expert that delegates to OpenBLAS is
// refused by the link-level screen with every finding recorded; the same kernel is accepted when
// the task allows the library and is its own baseline (and the check says so); a wrong kernel is
// refused by the gate, a kernel no faster than its baseline by the speed rule; --repo is
// recorded when it is a directory, an error otherwise. (An accepted, timed init is in
// decompose_rules_test, where decompose runs it for softmax.)
#include "lineage_fixture.h"

namespace lathe::lineage_test {
namespace {

using lineages::init_expert;
using lineages::init_options;

// A copy of a bundle under another name, one comment apart: a different kernel (hash) with the
// same code.
kernel_bundle variant(kernel_bundle k, const std::string& name) {
  k.name = name;
  k.sources.begin()->second += "\n// a variant for lathe's init tests\n";
  k.hash = bundle_hash(k);
  return k;
}

class init : public lineage_env {
 protected:
  agent::rules::rules_proposer rules_;
};

TEST_F(init, an_expert_that_calls_openblas_is_refused_by_the_link_screen) {
  const task t = shipped("gemm");
  ASSERT_TRUE(t.allow_libraries.empty());
  const kernel_bundle blas = variant(shipped_kernel(t, "openblas"), "expert_blas");
  auto c = init_expert(t, blas, *verifier_, rules_, *db_, {});
  ASSERT_TRUE(c) << c.error().message;
  EXPECT_FALSE(c->accepted);
  EXPECT_NE(c->reason.find("delegates to a library the task does not allow"), std::string::npos) << c->reason;
  EXPECT_NE(c->reason.find("cblas_sgemm (nm -D (undefined))"), std::string::npos) << c->reason;
  EXPECT_NE(c->reason.find("libopenblas"), std::string::npos) << c->reason;
  bool symbol = false, library = false;
  for (const auto& f : c->findings) {
    EXPECT_FALSE(f.allowed);
    symbol |= f.what == "symbol" && f.name == "cblas_sgemm" && f.where == "nm -D (undefined)";
    library |= f.what == "library" && f.name.rfind("libopenblas", 0) == 0 && f.where == "ldd";
  }
  EXPECT_TRUE(symbol);
  EXPECT_TRUE(library);
  EXPECT_TRUE(c->evaluations.empty());  // refused before the gate ran
  auto stored = db_->latest_expert_check(t.name, blas.hash);
  ASSERT_TRUE(stored && *stored);
  EXPECT_FALSE((*stored)->accepted);
  EXPECT_EQ((*stored)->reason, c->reason);

  // decompose will not walk it: it runs init, which refuses, and the run fails with the reason.
  lineages::decompose_options o;
  std::string run_id;
  o.progress = [&](const lineages::decompose_progress& p) { run_id = p.run_id; };
  auto d = lineages::decompose(t, blas, *verifier_, rules_, *db_, o);
  ASSERT_FALSE(d);
  EXPECT_NE(d.error().message.find("init refused the expert"), std::string::npos) << d.error().message;
  auto run = db_->get_run(run_id);
  ASSERT_TRUE(run && *run);
  EXPECT_EQ((*run)->state, run_state::failed);
}

TEST_F(init, a_library_the_task_allows_passes_and_its_own_baseline_is_said_to_be_so) {
  task t = shipped("gemm");
  t.allow_libraries = {"openblas"};
  const kernel_bundle blas = shipped_kernel(t, "openblas");  // the task's baseline itself
  init_options o;
  o.repo = source_dir() / "tasks" / "gemm";
  auto c = init_expert(t, blas, *verifier_, rules_, *db_, o);
  ASSERT_TRUE(c) << c.error().message;
  EXPECT_TRUE(c->accepted) << c->reason;
  EXPECT_NE(c->reason.find("the task's baseline is the expert itself"), std::string::npos) << c->reason;
  EXPECT_FALSE(c->findings.empty());
  for (const auto& f : c->findings) EXPECT_TRUE(f.allowed) << f.name;
  EXPECT_EQ(c->evaluations.size(), 1u);  // checked, not timed: there is nothing to time it against
  EXPECT_FALSE(c->ratio);
  EXPECT_EQ(c->repo, (source_dir() / "tasks" / "gemm").string());
  // The audit was asked about what no detector decides; the rule engine cannot decide them.
  EXPECT_FALSE(c->unknown_features.empty());
  EXPECT_NE(std::find(c->unknown_features.begin(), c->unknown_features.end(), "cache_blocking"),
            c->unknown_features.end());
  EXPECT_GT(c->id, 0);
}

// gemm's baseline is OpenBLAS, a vendor library: the expert's bar is the naive kernel (the
// other end of its lineage), and its ratio against the library is recorded, not required.
TEST_F(init, against_a_vendor_library_baseline_the_bar_is_the_naive_kernel) {
  task t = shipped("gemm");
  for (auto& s : t.shapes)
    if (s.time) s.symbols = {{"M", 384}, {"N", 384}, {"K", 384}};
  auto c = init_expert(t, shipped_kernel(t, "expert"), *verifier_, rules_, *db_, {});
  ASSERT_TRUE(c) << c.error().message;
  EXPECT_EQ(c->measured_against, "naive");
  ASSERT_TRUE(c->library_ratio) << c->reason;  // one gated comparison with openblas, recorded
  EXPECT_NE(c->reason.find("against openblas (a vendor library, recorded, no bar)"), std::string::npos)
      << c->reason;
  // The expert is many times its naive kernel here: the bar is cleared, twice.
  EXPECT_TRUE(c->accepted) << c->reason;
  ASSERT_TRUE(c->ratio && c->remeasured_ratio);
  EXPECT_GT(*c->ratio, 2.0);
  EXPECT_GT(*c->remeasured_ratio, 2.0);
  // The library once, the naive kernel twice; each asked again while the gate calls it unstable
  // (a fresh-clone run with a build beside it needed one more).
  EXPECT_GE(c->evaluations.size(), 3u);
  EXPECT_LE(c->evaluations.size(), 3u + 2 * static_cast<size_t>(lineages::init_options{}.unstable_retries));
}

TEST_F(init, a_wrong_or_slow_expert_is_refused_with_the_gates_reason) {
  const task t = small_softmax();
  kernel_bundle wrong = shipped_kernel(t, "expert");
  for (auto& [path, text] : wrong.sources)
    if (auto at = text.find("1.0f / exp_and_sum"); at != std::string::npos) text.replace(at, 4, "0.5f");
  wrong.hash = bundle_hash(wrong);
  auto w = init_expert(t, wrong, *verifier_, rules_, *db_, {});
  ASSERT_TRUE(w) << w.error().message;
  EXPECT_FALSE(w->accepted);
  EXPECT_NE(w->reason.find("the gate refused it: wrong_result"), std::string::npos) << w->reason;
  ASSERT_EQ(w->evaluations.size(), 1u);
  EXPECT_FALSE(w->features.empty());  // detected from the build all the same

  // The naive kernel, one comment apart, is not faster than itself.
  const kernel_bundle slow = variant(shipped_kernel(t, "naive"), "naive_again");
  auto s = init_expert(t, slow, *verifier_, rules_, *db_, {});
  ASSERT_TRUE(s) << s.error().message;
  EXPECT_FALSE(s->accepted);
  EXPECT_TRUE(s->reason.find("not an expert's speed") != std::string::npos ||
              s->reason.find("too noisy") != std::string::npos)
      << s->reason;
  EXPECT_TRUE(s->ratio || s->reason.find("too noisy") != std::string::npos);
}

TEST_F(init, a_repo_that_is_not_a_directory_is_an_error_and_nothing_is_stored) {
  const task t = shipped("gemm");
  init_options o;
  o.repo = source_dir() / "tasks" / "gemm" / "task.toml";
  auto c = init_expert(t, shipped_kernel(t, "expert"), *verifier_, rules_, *db_, o);
  ASSERT_FALSE(c);
  EXPECT_EQ(c.error().code, errc::invalid_argument);
  EXPECT_NE(c.error().message.find("not a directory"), std::string::npos);
  auto stored = db_->latest_expert_check(t.name, shipped_kernel(t, "expert").hash);
  ASSERT_TRUE(stored);
  EXPECT_FALSE(*stored);
}

}  // namespace
}  // namespace lathe::lineage_test
