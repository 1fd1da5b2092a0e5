// PyTorch problem files on CUDA PyTorch (label gpu): a KernelBench-format problem imported for a
// .cu candidate runs its oracle on the GPU; the correct candidate passes and the one that drops
// the initialization argument does not; the KernelBench protocol times the eager problem live.
#include <gtest/gtest.h>
#include <stdlib.h>

#include <filesystem>
#include <nlohmann/json.hpp>

#include "lathe_cli_json.h"
#include "lathe_cli_run.h"

namespace fs = std::filesystem;

namespace {

using lathe::testing::parse_json;
using lathe::testing::run_lathe;

bool has_device() { return fs::exists("/dev/nvidiactl"); }

const fs::path problems = fs::path(LATHE_SOURCE_DIR) / "tests/problems";

TEST(problem_gpu, a_kernelbench_problem_on_cuda_pytorch) {
  if (!has_device()) GTEST_SKIP() << "no NVIDIA device";
  const std::string ws = "--workspace /tmp/lathe-problem-gpu-ws ";
  const std::string prob = (problems / "kb_scale_relu.py").string();
  auto r = run_lathe(ws + "eval " + prob + " " + (problems / "candidates/scale_relu_ok.cu").string() +
                     " --mode kernelbench --seeds 5 --trials 50 --json");
  ASSERT_EQ(r.code, 0) << r.out << r.err;
  auto j = parse_json(r);
  EXPECT_EQ(j["outcome"], "ok");
  const std::string rt = j.value("reference_runtime", std::string());
  EXPECT_NE(rt.find("cuda"), std::string::npos) << rt;  // the oracle ran on CUDA PyTorch
  ASSERT_TRUE(j.contains("comparability"));
  EXPECT_GT(j["comparability"].value("eager_mean_seconds", 0.0), 0.0);
  EXPECT_GT(j["comparability"].value("speedup_vs_eager", 0.0), 0.0);
  std::printf("kb_scale_relu on %s: candidate mean %.2f us, eager mean %.2f us, speedup %.3fx\n", rt.c_str(),
              1e6 * j["comparability"].value("mean_seconds", 0.0),
              1e6 * j["comparability"].value("eager_mean_seconds", 0.0),
              j["comparability"].value("speedup_vs_eager", 0.0));
  r = run_lathe(ws + "eval " + prob + " " + (problems / "candidates/scale_relu_noalpha.cu").string() + " --json");
  EXPECT_EQ(r.code, 1) << r.out << r.err;
  j = parse_json(r);
  EXPECT_EQ(j["outcome"], "wrong_result") << j.value("message", std::string());
  fs::remove_all("/tmp/lathe-problem-gpu-ws");
}

}  // namespace
