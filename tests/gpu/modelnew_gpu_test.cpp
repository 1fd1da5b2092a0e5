// The field's candidates on a CUDA problem (issue 48, item 1; label gpu, skipped without a
// device): KernelBench ModelNew files — torch ops and inline CUDA (load_inline's cuda_sources) —
// run in the Python worker on the GPU (python/lathe_cuda.py), checked against the problem's fp64
// reference, and timed against the problem's own Model (eager PyTorch) in the same kind of worker,
// by CUDA events or graph replays (recorded). tests/gpu/cuda_swish: Swish on 4096 x 4096
// floats, a task.toml with platform = "cuda"; each candidate names its outcome on its first line.
// What runs without a device: tests/gate/python_cuda_test.
#include <gtest/gtest.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>

#include "lathe_cli_json.h"
#include "lathe_cli_run.h"

namespace fs = std::filesystem;

namespace {

using lathe::testing::parse_json;
using lathe::testing::run_lathe;

bool has_device() { return fs::exists("/dev/nvidiactl"); }

const fs::path task_dir = fs::path(LATHE_SOURCE_DIR) / "tests/gpu/cuda_swish";
const fs::path candidates = task_dir / "candidates";
// One workspace for the suite: the inline CUDA extension is compiled once (nvcc against torch's
// headers: tens of seconds) and found in its cache by the evaluations after the first.
const std::string ws = "--workspace /tmp/lathe-modelnew-gpu-ws ";

std::string expected(const fs::path& file) {
  std::ifstream in(file);
  std::string line;
  std::getline(in, line);
  const std::string tag = "# expect: ";
  return line.rfind(tag, 0) == 0 ? line.substr(tag.size()) : std::string();
}

nlohmann::json eval_json(const std::string& candidate, const std::string& extra, int& code) {
  auto r = run_lathe(ws + "eval " + task_dir.string() + " " + (candidates / candidate).string() +
                     " --json " + extra);
  code = r.code;
  EXPECT_FALSE(r.out.empty()) << r.err;
  return parse_json(r);
}

class modelnew_gpu : public ::testing::TestWithParam<std::string> {};

// Checks only (--no-time): every candidate's own outcome, each one a failure mode of its own.
TEST_P(modelnew_gpu, gets_its_own_outcome) {
  if (!has_device()) GTEST_SKIP() << "no NVIDIA device";
  const std::string file = GetParam() + ".py";
  const std::string want = expected(candidates / file);
  ASSERT_FALSE(want.empty()) << file;
  int code = 0;
  const nlohmann::json j = eval_json(file, "--no-time --seeds 3", code);
  const std::string message = j.value("message", std::string());
  const std::string diagnostics = j.value("diagnostics", std::string());
  EXPECT_EQ(j.value("outcome", std::string()), want) << message << "\n" << diagnostics;
  EXPECT_EQ(code, want == "ok" ? 0 : 1);
  // The problem's oracle ran on CUDA PyTorch (where the candidate built: a compile error stops the
  // evaluation before any worker or oracle starts, and the H100 run of 2026-12-06 showed it).
  if (want != "compile_error") {
    EXPECT_NE(j.value("reference_runtime", std::string()).find("cuda"), std::string::npos)
        << j.value("reference_runtime", std::string());
  }
  if (want == "ok") {
    // Every check came through host memory (no CUDA IPC for a Python worker yet), and said so.
    EXPECT_EQ(j.value("problem_path", std::string()), "host");
    EXPECT_NE(diagnostics.find("a Python kernel's worker shares no device buffer yet"), std::string::npos)
        << diagnostics;
    EXPECT_GE(j["checks"].size(), 3u);
  }
  if (GetParam() == "swish_wrong") {
    EXPECT_NE(message.find("elements wrong"), std::string::npos) << message;
  }
  if (GetParam() == "swish_host_output") {
    EXPECT_NE(message.find("ModelNew returned a cpu"), std::string::npos) << message;
  }
  if (GetParam() == "swish_broken_cuda") {
    EXPECT_NE(diagnostics.find("nvcc"), std::string::npos) << diagnostics.substr(0, 4000);
  }
  if (GetParam() == "swish_inline_cuda") {
    // Built for the device's architecture (lathe names it: the build's sandbox has no device).
    EXPECT_NE(diagnostics.find("extension(s)"), std::string::npos) << diagnostics.substr(0, 4000);
  }
}

INSTANTIATE_TEST_SUITE_P(swish, modelnew_gpu,
                         ::testing::Values("swish_torch", "swish_inline_cuda", "swish_wrong",
                                           "swish_broken_cuda", "swish_host_output"),
                         [](const auto& info) { return info.param; });

// The paired decision against eager PyTorch: both sides Python workers on the device, timed by
// the same method (graph replays for both or neither), the A/A control on eager.
TEST(modelnew_gpu_timed, inline_cuda_is_paired_against_eager_pytorch) {
  if (!has_device()) GTEST_SKIP() << "no NVIDIA device";
  int code = 0;
  const nlohmann::json j = eval_json("swish_inline_cuda.py", "--max-time 2", code);
  const std::string outcome = j.value("outcome", std::string());
  // ok (a decision, whatever its ratio) or unstable (the machine could not decide): never a
  // failure of the kernel.
  EXPECT_TRUE(outcome == "ok" || outcome == "unstable")
      << outcome << ": " << j.value("message", std::string()) << "\n" << j.value("diagnostics", std::string());
  EXPECT_EQ(j.value("baseline_name", std::string()), "eager");
  ASSERT_TRUE(j.contains("paired")) << j.dump(1).substr(0, 4000);
  const auto& p = j["paired"];
  const std::string a = p.value("a_method", std::string()), b = p.value("b_method", std::string());
  EXPECT_TRUE(a == "graph" || a == "events") << a;
  EXPECT_TRUE(b == "graph" || b == "events") << b;
  EXPECT_GT(j.value("median_seconds", 0.0), 0.0);
  EXPECT_GT(j.value("baseline_median_seconds", 0.0), 0.0);
  // 64 MiB read and 64 MiB written: above 10 us on any GPU lathe runs on (an H200 moves ~4 TB/s).
  EXPECT_GT(j.value("median_seconds", 0.0), 10e-6);
  std::printf("swish 4096x4096 inline CUDA vs eager: %s, candidate %.2f us (%s), eager %.2f us (%s), ratio %.3f "
              "[%.3f, %.3f]\n",
              outcome.c_str(), 1e6 * j.value("median_seconds", 0.0), a.c_str(),
              1e6 * j.value("baseline_median_seconds", 0.0), b.c_str(), p.value("ratio", 0.0),
              p.value("ci_low", 0.0), p.value("ci_high", 0.0));
}

// KernelBench's cuda_event protocol on the Python worker (lathe_cuda.Device.bench), eager timed
// live in the problem's worker beside it.
TEST(modelnew_gpu_timed, the_kernelbench_protocol_times_a_modelnew_on_the_device) {
  if (!has_device()) GTEST_SKIP() << "no NVIDIA device";
  int code = 0;
  const nlohmann::json j = eval_json("swish_torch.py", "--mode kernelbench --seeds 3 --trials 50", code);
  EXPECT_EQ(j.value("outcome", std::string()), "ok")
      << j.value("message", std::string()) << "\n" << j.value("diagnostics", std::string());
  ASSERT_TRUE(j.contains("comparability")) << j.dump(1).substr(0, 4000);
  const auto& c = j["comparability"];
  EXPECT_EQ(c.value("trials", 0), 50);
  EXPECT_GT(c.value("mean_seconds", 0.0), 10e-6);
  EXPECT_GT(c.value("eager_mean_seconds", 0.0), 0.0);
  EXPECT_GT(c.value("speedup_vs_eager", 0.0), 0.0);
  std::printf("swish 4096x4096 F.silu, KernelBench protocol: mean %.2f us, eager %.2f us, speedup %.3fx\n",
              1e6 * c.value("mean_seconds", 0.0), 1e6 * c.value("eager_mean_seconds", 0.0),
              c.value("speedup_vs_eager", 0.0));
}

// Triton's do_bench (the L2 flushed before each call, budgets in milliseconds) on the inline-CUDA
// candidate, its extension found in the suite's cache.
TEST(modelnew_gpu_timed, do_bench_times_an_inline_cuda_modelnew_on_the_device) {
  if (!has_device()) GTEST_SKIP() << "no NVIDIA device";
  int code = 0;
  const nlohmann::json j = eval_json("swish_inline_cuda.py", "--mode do_bench --seeds 3", code);
  EXPECT_EQ(j.value("outcome", std::string()), "ok")
      << j.value("message", std::string()) << "\n" << j.value("diagnostics", std::string());
  ASSERT_TRUE(j.contains("comparability")) << j.dump(1).substr(0, 4000);
  const auto& c = j["comparability"];
  EXPECT_EQ(c.value("protocol", std::string()), "do_bench");
  EXPECT_GT(c.value("trials", 0), 0);
  EXPECT_GT(c.value("mean_seconds", 0.0), 10e-6);
  EXPECT_GT(c.value("speedup_vs_eager", 0.0), 0.0);
  std::printf("swish 4096x4096 inline CUDA, do_bench: mean %.2f us over %d calls, eager %.2f us, speedup %.3fx\n",
              1e6 * c.value("mean_seconds", 0.0), c.value("trials", 0), 1e6 * c.value("eager_mean_seconds", 0.0),
              c.value("speedup_vs_eager", 0.0));
  fs::remove_all("/tmp/lathe-modelnew-gpu-ws");
}

}  // namespace
