// Every shipped kernel through the real gate: naive and expert correct; experts faster than
// their naive kernel with a confidence interval that excludes 1; library baselines correct as
// baselines and forbidden as candidates.
#include <gtest/gtest.h>

#include <cstdio>

#include "core/outcome.h"
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
  cfg_.policy.max_seconds = 2.0;
  // The naive gemm takes about a second a call: the default 4 process pairs and 6 rounds made
  // this one comparison 66 s of the CI run. 2 and 4 (lathe's --quick) still give a CI that
  // excludes 1 for speedups of 5x and more; the margin would only grow with the noise.
  cfg_.policy.processes = 2;
  cfg_.policy.min_rounds = 4;
  // `unstable` is the gate refusing to decide on a noisy machine (its A/A interval too wide), not
  // a verdict on the kernel: on a 2-core CI machine an OpenMP kernel meets that now and then (one
  // CI run read an A/A interval of [0.75, 1.73]). Ask again, at most twice; any other outcome
  // counts at once.
  evaluation e;
  for (int attempt = 0; attempt < 3; ++attempt) {
    e = eval(t, kernel(*find_kernel(t, "expert")), true, "naive");
    if (e.result != outcome::unstable) break;
    std::printf("attempt %d: unstable (%s); asking again\n", attempt + 1, e.message.c_str());
  }
  ASSERT_EQ(e.result, outcome::ok) << e.message << "\n" << e.diagnostics;
  ASSERT_TRUE(e.paired);
  EXPECT_GT(e.paired->ci_low, 1.0) << "expert/naive speedup " << e.paired->ratio << " ["
                                   << e.paired->ci_low << ", " << e.paired->ci_high << "]";
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
