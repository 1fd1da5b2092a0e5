// PyTorch problem files on CUDA PyTorch (label gpu): a KernelBench-format problem imported for a
// .cu candidate runs its oracle on the GPU; the correct candidate passes and the one that drops
// the initialization argument does not; the KernelBench protocol times the eager problem live.
// The checks go through CUDA IPC (docs/problems.md): the problem's worker writes the inputs into
// the candidate's device memory and compares its outputs there; every verdict must be the one
// the host path (--host-trials) gives on the same seeds, and a worker whose IPC fails or lies
// must leave the verdict to the host path.
#include <gtest/gtest.h>
#include <stdlib.h>

#include <cmath>
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
const fs::path ipc_dir = fs::path(LATHE_SOURCE_DIR) / "tests/gpu/problem_ipc";
const std::string ws = "--workspace /tmp/lathe-problem-gpu-ws ";

TEST(problem_gpu, a_kernelbench_problem_on_cuda_pytorch) {
  if (!has_device()) GTEST_SKIP() << "no NVIDIA device";
  const std::string prob = (problems / "kb_scale_relu.py").string();
  auto r = run_lathe(ws + "eval " + prob + " " + (problems / "candidates/scale_relu_ok.cu").string() +
                     " --mode kernelbench --seeds 5 --trials 50 --json");
  ASSERT_EQ(r.code, 0) << r.out << r.err;
  auto j = parse_json(r);
  EXPECT_EQ(j["outcome"], "ok");
  const std::string rt = j.value("reference_runtime", std::string());
  EXPECT_NE(rt.find("cuda"), std::string::npos) << rt;  // the oracle ran on CUDA PyTorch
  // The checks and the check after the timing loop went through CUDA IPC.
  EXPECT_EQ(j.value("problem_path", std::string()), "cuda_ipc") << j.value("diagnostics", std::string());
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

nlohmann::json eval_json(const fs::path& candidate, const std::string& extra) {
  const std::string prob = (problems / "kb_scale_relu.py").string();
  // Checks only, as these were before a bare problem on CUDA had eager PyTorch as its baseline
  // (docs/python-kernels.md "On CUDA"): the IPC path's verdicts are what is compared.
  auto r = run_lathe(ws + "eval " + prob + " " + candidate.string() + " --seed 4242 --seeds 4 --no-time --json " + extra);
  EXPECT_TRUE(r.code == 0 || r.code == 1) << r.out << r.err;
  return parse_json(r);
}

bool close(double a, double b, double rel) {
  return a == b || (std::isnan(a) && std::isnan(b)) || std::fabs(a - b) <= rel * std::max(std::fabs(a), std::fabs(b));
}

// The same verdicts, check by check, on the two paths (the same seeds draw the same inputs).
void expect_same_checks(const nlohmann::json& ipc, const nlohmann::json& host) {
  EXPECT_EQ(ipc["outcome"], host["outcome"]) << ipc.value("message", std::string()) << " | "
                                             << host.value("message", std::string());
  const auto& a = ipc["checks"];
  const auto& b = host["checks"];
  ASSERT_EQ(a.size(), b.size());
  for (size_t i = 0; i < a.size(); ++i) {
    SCOPED_TRACE("check " + std::to_string(i));
    EXPECT_EQ(a[i]["seed"], b[i]["seed"]);
    EXPECT_EQ(a[i]["output"], b[i]["output"]);
    EXPECT_EQ(a[i]["passed"], b[i]["passed"]);
    EXPECT_EQ(a[i]["mismatches"], b[i]["mismatches"]);
    EXPECT_TRUE(close(a[i]["max_abs_err"].get<double>(), b[i]["max_abs_err"].get<double>(), 1e-12))
        << a[i]["max_abs_err"] << " vs " << b[i]["max_abs_err"];
    EXPECT_TRUE(close(a[i]["norm_err"].get<double>(), b[i]["norm_err"].get<double>(), 1e-9))
        << a[i]["norm_err"] << " vs " << b[i]["norm_err"];
    // The relative error skips elements near zero by the reference's RMS, summed in another
    // order on the GPU: equal to rounding.
    EXPECT_TRUE(close(a[i]["max_rel_err"].get<double>(), b[i]["max_rel_err"].get<double>(), 1e-9));
    // The first mismatch names the same element and values (the host lists up to five).
    if (!a[i]["first_mismatches"].empty() && !b[i]["first_mismatches"].empty()) {
      EXPECT_EQ(a[i]["first_mismatches"][0], b[i]["first_mismatches"][0]);
    }
  }
}

struct ipc_case {
  fs::path candidate;
  std::string outcome;
};

class problem_ipc : public ::testing::TestWithParam<ipc_case> {};

TEST_P(problem_ipc, the_checks_go_through_cuda_ipc_and_agree_with_the_host_path) {
  if (!has_device()) GTEST_SKIP() << "no NVIDIA device";
  const ipc_case& c = GetParam();
  const nlohmann::json ipc = eval_json(c.candidate, "");
  EXPECT_EQ(ipc["outcome"], c.outcome) << ipc.value("message", std::string());
  EXPECT_EQ(ipc.value("problem_path", std::string()), "cuda_ipc") << ipc.value("diagnostics", std::string());
  EXPECT_EQ(ipc.value("diagnostics", std::string()).find("CUDA IPC"), std::string::npos)
      << ipc.value("diagnostics", std::string());
  const nlohmann::json host = eval_json(c.candidate, "--host-trials");
  EXPECT_EQ(host["outcome"], c.outcome) << host.value("message", std::string());
  EXPECT_EQ(host.value("problem_path", std::string()), "host");
  expect_same_checks(ipc, host);
}

INSTANTIATE_TEST_SUITE_P(
    candidates, problem_ipc,
    ::testing::Values(ipc_case{problems / "candidates/scale_relu_ok.cu", "ok"},
                      ipc_case{problems / "candidates/scale_relu_noalpha.cu", "wrong_result"},
                      ipc_case{ipc_dir / "nan_element.cu", "nan_or_inf"},
                      ipc_case{ipc_dir / "half_written.cu", "unwritten_output"},
                      ipc_case{ipc_dir / "mutate_input.cu", "input_mutated"},
                      ipc_case{ipc_dir / "cached.cu", "cached_output"}),
    [](const ::testing::TestParamInfo<ipc_case>& i) { return i.param.candidate.stem().string(); });

// A problem worker from tests/gpu/problem_ipc (lathe_problem.py with one method replaced), for
// the evaluations of this scope.
class scoped_worker {
 public:
  explicit scoped_worker(const std::string& script) {
    setenv("LATHE_PROBLEM_WORKER", (ipc_dir / script).c_str(), 1);
    setenv("PYTHONPATH", (fs::path(LATHE_SOURCE_DIR) / "python").c_str(), 1);
  }
  ~scoped_worker() {
    unsetenv("LATHE_PROBLEM_WORKER");
    unsetenv("PYTHONPATH");
  }
};

TEST(problem_gpu, a_worker_without_cuda_ipc_falls_back_to_host_memory) {
  if (!has_device()) GTEST_SKIP() << "no NVIDIA device";
  scoped_worker w("worker_without_ipc.py");
  for (const auto& [cand, outcome] : {std::pair{"candidates/scale_relu_ok.cu", "ok"},
                                      std::pair{"candidates/scale_relu_noalpha.cu", "wrong_result"}}) {
    const nlohmann::json j = eval_json(problems / cand, "");
    EXPECT_EQ(j["outcome"], outcome) << j.value("message", std::string());
    EXPECT_EQ(j.value("problem_path", std::string()), "host");
    EXPECT_NE(j.value("diagnostics", std::string()).find("CUDA IPC refused by the test's worker"),
              std::string::npos)
        << j.value("diagnostics", std::string());
  }
}

TEST(problem_gpu, a_comparison_that_disagrees_with_the_host_is_not_trusted) {
  if (!has_device()) GTEST_SKIP() << "no NVIDIA device";
  scoped_worker w("worker_lying_ipc.py");
  // The lying worker calls every output right: the first trial's cross-check against the host
  // catches it for the wrong kernel, and the host's verdict stands.
  const nlohmann::json j = eval_json(problems / "candidates/scale_relu_noalpha.cu", "");
  EXPECT_EQ(j["outcome"], "wrong_result") << j.value("message", std::string());
  EXPECT_EQ(j.value("problem_path", std::string()), "host");
  EXPECT_NE(j.value("diagnostics", std::string()).find("disagrees with the host's"), std::string::npos)
      << j.value("diagnostics", std::string());
  fs::remove_all("/tmp/lathe-problem-gpu-ws");
}

}  // namespace
