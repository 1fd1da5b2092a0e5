// Every shipped kernel through the real gate: naive and expert correct; experts faster than
// their naive kernel with a confidence interval that excludes 1; library baselines correct as
// baselines and forbidden as candidates.
#include <gtest/gtest.h>

#include <cstdio>

#include "core/outcome.h"
#include "gate/paired.h"
#include "gate_fixture.h"

namespace fs = std::filesystem;
using namespace lathe;

namespace {

using lathe_gate_env = lathe::testing::gate_env;

fs::path task_dir(const std::string& name) { return lathe::testing::source_dir() / "tasks" / name; }

class shipped : public lathe::testing::gate_env, public ::testing::WithParamInterface<std::string> {};

}  // namespace

TEST_P(shipped, naive_is_correct) {
  task t = load(task_dir(GetParam()));
  evaluation e = eval(t, kernel(*find_kernel(t, "naive")), false);
  EXPECT_EQ(e.result, outcome::ok) << e.message << "\n" << e.diagnostics;
}

INSTANTIATE_TEST_SUITE_P(cpu, shipped,
                         ::testing::Values("gemm", "softmax", "conv2d", "layernorm", "transpose", "silu",
                                           "row_mean"),
                         [](const auto& info) { return info.param; });

class expert : public lathe::testing::gate_env, public ::testing::WithParamInterface<std::string> {};

TEST_P(expert, is_correct_and_faster_than_naive) {
  task t = load(task_dir(GetParam()));
  // The naive gemm takes about a second a call at the task's timed 768^3, and the timing stage
  // (warm-up, ABBA rounds, the A/A control) made this one comparison 68 s of a CI run. The claim
  // holds at 384^3 (1/8 of the work; the expert is still tens of times faster): that set is timed
  // (and checked) here in its place; the task's own 768^3 everywhere else.
  if (GetParam() == "gemm")
    for (auto& s : t.shapes)
      if (s.time) s.symbols = {{"M", 384}, {"N", 384}, {"K", 384}};
  // The same for softmax: the naive kernel takes about 0.1 s a call on the task's 4096 x 4096, so
  // 2 s of timing held four A/A rounds, and one fresh-clone CI run read three A/A intervals in a
  // row that reached 0.2 past 1 (the gate's `unstable`). A quarter of the rows (still twice the
  // L2, 32 MB in and out) gives four times the rounds; the expert is ten times faster there too.
  if (GetParam() == "softmax")
    for (auto& s : t.shapes)
      if (s.time) s.symbols["R"] = 1024;
  cfg_.policy.max_seconds = 2.0;
  // The naive gemm takes about a second a call: the default 4 process pairs and 6 rounds made
  // this one comparison 66 s of the CI run. 2 and 4 (lathe's --quick) still give a CI that
  // excludes 1 for speedups of 5x and more; the margin would only grow with the noise.
  cfg_.policy.processes = 2;
  cfg_.policy.min_rounds = 4;
  // The claim is decided by PROTOCOL.md's rule, not by the gate's refusal to decide: the expert is
  // faster when the lower end of its paired interval clears 1 + epsilon, epsilon three times the
  // A/A spread (at least 5%). A noisy machine widens epsilon instead of failing the test; a
  // kernel that is not faster by far more than the noise fails all three attempts. The gate's own
  // `unstable` threshold is off here (hostile_test does the same) and is tested
  // there, by an_aa_interval_past_the_threshold_is_unstable.
  cfg_.policy.aa_unstable = 1e9;
  evaluation e;
  double need = 0;
  for (int attempt = 0; attempt < 3; ++attempt) {
    e = eval(t, kernel(*find_kernel(t, "expert")), true, "naive");
    ASSERT_EQ(e.result, outcome::ok) << e.message << "\n" << e.diagnostics;
    ASSERT_TRUE(e.paired && e.aa);
    need = 1 + gate::decision_epsilon(*e.aa, 0.05);
    std::printf("attempt %d: speedup %.3f [%.3f, %.3f], A/A [%.3f, %.3f]: faster means > %.3f\n",
                attempt + 1, e.paired->ratio, e.paired->ci_low, e.paired->ci_high, e.aa->ci_low,
                e.aa->ci_high, need);
    if (e.paired->ci_low > need) break;
  }
  EXPECT_GT(e.paired->ci_low, need) << "expert/naive speedup " << e.paired->ratio << " ["
                                    << e.paired->ci_low << ", " << e.paired->ci_high << "], A/A ["
                                    << e.aa->ci_low << ", " << e.aa->ci_high << "]";
}

// The held-out experts (layernorm, silu: only for the gap optimize recovers) are gated and timed
// against their naive kernels by tests/search/bench_cli_test.cpp.
INSTANTIATE_TEST_SUITE_P(cpu, expert, ::testing::Values("gemm", "softmax", "conv2d"),
                         [](const auto& info) { return info.param; });

TEST_F(lathe_gate_env, library_baselines_are_correct_but_forbidden_as_candidates) {
  for (const auto& [name, base] : {std::pair<std::string, std::string>{"gemm", "openblas"},
                                   {"conv2d", "im2col_openblas"}}) {
    task t = load(task_dir(name));
    EXPECT_EQ(t.baseline, base);
    evaluation e = eval(t, kernel(*find_kernel(t, base)), false);
    EXPECT_EQ(e.result, outcome::forbidden) << name << ": " << e.message;
    EXPECT_NE(e.message.find("openblas"), std::string::npos) << e.message;
    // As the task's own baseline it may call the library, and it is checked like any kernel.
    gate::gate_config cfg = cfg_;
    cfg.time = false;
    gate::gate_request req;
    req.t = &t;
    req.candidate = kernel(*find_kernel(t, base));
    req.baseline = req.candidate;
    req.role = gate::screen_role::baseline;
    evaluation b = gate::evaluate(cfg, req);
    EXPECT_EQ(b.result, outcome::ok) << name << ": " << b.message;
  }
}

// Every source task has an expert (a lineage's end point). A held-out task may have one too, only
// to measure how much of the naive-to-expert gap `optimize` recovers: init and decompose refuse
// held-out tasks (tests/lineage), so it is never mined.
TEST_F(lathe_gate_env, every_source_task_has_an_expert) {
  for (const auto& entry : fs::directory_iterator(lathe::testing::source_dir() / "tasks")) {
    task t = load(entry.path());
    if (t.role == task_role::source) {
      EXPECT_TRUE(find_kernel(t, "expert")) << t.name;
    }
  }
}
