// Device trials on a real GPU (label gpu; skipped without an NVIDIA device): inputs generated on
// the device, the fp64 GPU reference in the oracle process, outputs compared there. The task is
// tests/integration/tasks/axpy_cuda with the GPU reference of tests/gpu/device_trial added.
#include <cstdint>
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <fstream>
#include <sstream>

#include "core/outcome.h"
#include "integration/gate_fixture.h"

namespace fs = std::filesystem;
using namespace lathe;

namespace {

bool has_device() { return fs::exists("/dev/nvidiactl"); }

const fs::path source = lathe::testing::source_dir();

class device_trials : public lathe::testing::gate_env {
 protected:
  void SetUp() override {
    if (!has_device()) GTEST_SKIP() << "no NVIDIA device";
    gate_env::SetUp();
    cfg_.sandbox.rss_limit_bytes = uint64_t{8} << 30;
    cfg_.call_timeout_s = 20;  // CUDA contexts and nvcc builds take seconds
  }
  // axpy_cuda copied into the test directory with `gpu_reference = <reference>`.
  fs::path task_with(const std::string& reference) {
    const fs::path dst = dir_ / "axpy_cuda";
    fs::remove_all(dst);
    fs::copy(source / "tests/integration/tasks/axpy_cuda", dst, fs::copy_options::recursive);
    fs::copy_file(source / "tests/gpu/device_trial" / reference, dst / "reference.cu");
    std::ifstream in(dst / "task.toml");
    std::stringstream out;
    std::string line;
    while (std::getline(in, line)) {
      out << line << "\n";
      if (line.rfind("reference =", 0) == 0) out << "gpu_reference = \"reference.cu\"\n";
    }
    std::ofstream(dst / "task.toml") << out.str();
    return dst;
  }
};

}  // namespace

TEST_F(device_trials, correct_kernel_is_checked_on_the_device_and_timed_by_graphs) {
  task t = load(task_with("reference.cu"));
  ASSERT_FALSE(t.gpu_reference.empty());
  evaluation e = eval(t, kernel(t.dir / "kernels/naive"), true);
  ASSERT_EQ(e.result, outcome::ok) << e.message << "\n" << e.diagnostics;
  EXPECT_EQ(e.trials_on, trial_site::device);
  ASSERT_TRUE(e.paired && e.median_seconds);
  // 1M-element axpy runs for a few microseconds: below graph_below_seconds, so graph replay.
  EXPECT_EQ(e.paired->a_method, timing_method::graph);
  EXPECT_EQ(e.paired->b_method, timing_method::graph);
  // Two shape sets, three seeds each, then a sample of the candidate processes' timed calls, each
  // against the reference of the window it read (time_cuda.cpp).
  ASSERT_GT(e.checks.size(), 6u);
  for (size_t i = 0; i < 6; ++i) EXPECT_EQ(e.checks[i].shape_set, i < 3 ? "small" : "large");
  for (const auto& c : e.checks) EXPECT_TRUE(c.passed) << c.shape_set << " " << c.seed;
  std::printf("device trials, axpy naive: %.2f us per call (graph), self-ratio %.4f [%.4f, %.4f]%s\n",
              *e.median_seconds * 1e6, e.paired->ratio, e.paired->ci_low, e.paired->ci_high,
              e.diagnostics.find("CUDA IPC unavailable") != std::string::npos ? " (staged, no IPC)" : " (IPC)");
}

TEST_F(device_trials, host_and_device_trials_see_the_same_errors) {
  // Same seeds: the device generates the host's inputs bit for bit, so the kernel computes the
  // same outputs and both comparisons report the same errors (the references differ by at most
  // an ulp of double).
  task t = load(task_with("reference.cu"));
  cfg_.seed_base = 12345;
  evaluation dev = eval(t, kernel(t.dir / "kernels/naive"), false);
  cfg_.device_trials = false;
  evaluation host = eval(t, kernel(t.dir / "kernels/naive"), false);
  ASSERT_EQ(dev.result, outcome::ok) << dev.message;
  ASSERT_EQ(host.result, outcome::ok) << host.message;
  EXPECT_EQ(dev.trials_on, trial_site::device);
  EXPECT_EQ(host.trials_on, trial_site::host);
  ASSERT_EQ(dev.checks.size(), host.checks.size());
  for (size_t i = 0; i < dev.checks.size(); ++i) {
    EXPECT_EQ(dev.checks[i].seed, host.checks[i].seed);
    EXPECT_NEAR(dev.checks[i].max_abs_err, host.checks[i].max_abs_err,
                1e-12 * std::max(1e-30, host.checks[i].max_abs_err) + 1e-300);
    EXPECT_NEAR(dev.checks[i].norm_err, host.checks[i].norm_err, 1e-9 * host.checks[i].norm_err + 1e-300);
    EXPECT_GT(host.checks[i].max_abs_err, 0.0) << "fp32 axpy against fp64 must show rounding";
  }
}

TEST_F(device_trials, a_gpu_reference_that_disagrees_with_the_cpu_reference_is_refused) {
  task t = load(task_with("wrong_reference.cu"));
  evaluation e = eval(t, kernel(t.dir / "kernels/naive"), false);
  // The task's own reference failing is not the kernel's doing: infra_error (core/outcome.h).
  EXPECT_EQ(e.result, outcome::infra_error);
  EXPECT_NE(e.message.find("disagrees with its CPU reference"), std::string::npos) << e.message;
}

class device_hostile : public device_trials, public ::testing::WithParamInterface<std::string> {};

TEST_P(device_hostile, rejected_by_the_oracle_with_its_own_outcome) {
  const fs::path file = source / "tests/gpu/hostile" / (GetParam() + ".cu");
  if (!fs::exists(file)) GTEST_SKIP() << file << " absent";
  const std::string want = lathe::testing::expected_outcome(file);
  ASSERT_FALSE(want.empty()) << file;
  task t = load(task_with("reference.cu"));
  evaluation e = eval(t, kernel(file), GetParam() == "graph_noop");
  EXPECT_EQ(std::string(to_string(e.result)), want) << e.message << "\n" << e.diagnostics;
  EXPECT_EQ(e.trials_on, trial_site::device);
}

INSTANTIATE_TEST_SUITE_P(gpu, device_hostile,
                         ::testing::Values("wrong", "unwritten", "mutate_input", "cached",
                                           "illegal_address", "graph_noop"));

TEST_F(device_trials, kernelbench_mode_reproduces_its_protocol) {
  task t = load(task_with("reference.cu"));
  cfg_.mode = gate::timing_mode::kernelbench;
  cfg_.seeds = 5;
  cfg_.bench_warmup = 3;
  cfg_.bench_trials = 100;
  evaluation e = eval(t, kernel(t.dir / "kernels/naive"), true);
  ASSERT_EQ(e.result, outcome::ok) << e.message << "\n" << e.diagnostics;
  ASSERT_TRUE(e.comparability);
  const auto& c = *e.comparability;
  EXPECT_EQ(c.protocol, "kernelbench");
  EXPECT_EQ(c.trials, 100u);
  // The timed shape only: five trials, then the outputs of the last timed call once more.
  EXPECT_EQ(e.checks.size(), 6u);
  for (const auto& r : e.checks) EXPECT_EQ(r.shape_set, "large");
  EXPECT_GT(c.min_seconds, 0.0);
  EXPECT_LE(c.min_seconds, c.median_seconds);
  EXPECT_LE(c.median_seconds, c.max_seconds);
  EXPECT_GE(c.host_seconds, c.mean_seconds * c.trials);
  EXPECT_FALSE(e.paired) << "comparability mode is not paired";
  bool timed = false;
  for (const auto& [stage, s] : e.stage_seconds) timed = timed || stage == "time";
  EXPECT_TRUE(timed);
  std::printf("kernelbench protocol, axpy naive: mean %.2f us, std %.2f us, min %.2f, max %.2f; wall %.2f s\n",
              c.mean_seconds * 1e6, c.std_seconds * 1e6, c.min_seconds * 1e6, c.max_seconds * 1e6,
              e.wall_seconds);
}

TEST_F(device_trials, do_bench_mode_flushes_l2_and_sizes_repetitions) {
  task t = load(task_with("reference.cu"));
  cfg_.mode = gate::timing_mode::do_bench;
  evaluation e = eval(t, kernel(t.dir / "kernels/naive"), true);
  ASSERT_EQ(e.result, outcome::ok) << e.message << "\n" << e.diagnostics;
  ASSERT_TRUE(e.comparability);
  EXPECT_EQ(e.comparability->protocol, "do_bench");
  // 100 ms of repetitions of a few-microsecond kernel (plus a 256 MB memset each): many trials.
  EXPECT_GT(e.comparability->trials, 10u);
  std::printf("do_bench protocol, axpy naive: mean %.2f us over %u trials\n",
              e.comparability->mean_seconds * 1e6, e.comparability->trials);
}
