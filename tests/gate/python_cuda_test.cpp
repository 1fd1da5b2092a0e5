// Python kernels on CUDA tasks (issue 48, item 1), what is decided without a GPU: which language
// runs on which platform, the architecture a ModelNew's inline CUDA is compiled for, which Python
// kernels ask for the GPU, the worker's arguments, and the worker's device path with the device's
// buffer in host memory (python_cuda_plumbing.py). The runs on a device: tests/gpu/modelnew_gpu_test.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "core/poison.h"
#include "gate/cpu/wire.h"
#include "gate/python_build.h"
#include "gate/python_kernel.h"

namespace fs = std::filesystem;
using namespace lathe;
using namespace lathe::gate;

namespace {

const fs::path source_dir = LATHE_SOURCE_DIR;

std::string read(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::ostringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// stdout of `command`, and its exit status.
std::string run(const std::string& command, int& status) {
  FILE* p = popen(command.c_str(), "r");
  std::string out;
  if (!p) {
    status = -1;
    return out;
  }
  char buf[4096];
  while (size_t n = fread(buf, 1, sizeof buf, p)) out.append(buf, n);
  status = pclose(p);
  return out;
}

TEST(python_cuda, a_python_kernel_runs_on_either_platform_and_an_abi_kernel_on_its_own) {
  EXPECT_EQ(language_misfit(language::python, platform::cuda), "");
  EXPECT_EQ(language_misfit(language::python, platform::cpu), "");
  EXPECT_EQ(language_misfit(language::cuda, platform::cuda), "");
  EXPECT_EQ(language_misfit(language::cpp, platform::cpu), "");
  EXPECT_EQ(language_misfit(language::cpp, platform::cuda), "a cpp kernel for a cuda task");
  EXPECT_EQ(language_misfit(language::cuda, platform::cpu), "a cuda kernel for a cpu task");
}

TEST(python_cuda, inline_cuda_is_compiled_for_the_targets_architecture) {
  EXPECT_EQ(torch_cuda_arch("sm_90a"), "9.0a");
  EXPECT_EQ(torch_cuda_arch("sm_90"), "9.0");
  EXPECT_EQ(torch_cuda_arch("sm_100a"), "10.0a");
  EXPECT_EQ(torch_cuda_arch("sm_86"), "8.6");
  // A CPU task's ISA names no CUDA architecture: a CPU ModelNew's build is unchanged.
  EXPECT_EQ(torch_cuda_arch("x86-64-v3"), "");
  EXPECT_EQ(torch_cuda_arch("x86-64"), "");
  EXPECT_EQ(torch_cuda_arch("sm_"), "");
}

TEST(python_cuda, a_python_kernel_that_asks_for_the_gpu_is_told_from_one_that_does_not) {
  // The GPU test's candidates: inline CUDA asks for the device; the torch-only ones do not (a
  // task.toml with platform = "cuda" puts them there).
  const fs::path swish = source_dir / "tests/gpu/cuda_swish/candidates";
  EXPECT_TRUE(names_cuda(read(swish / "swish_inline_cuda.py")));
  EXPECT_TRUE(names_cuda(read(swish / "swish_broken_cuda.py")));
  EXPECT_FALSE(names_cuda(read(swish / "swish_wrong.py")));
  EXPECT_TRUE(names_cuda("import triton\nimport triton.language as tl\n"));
  EXPECT_TRUE(names_cuda("from triton import jit\n"));
  EXPECT_TRUE(names_cuda("y = torch.empty(4, device=\"cuda\")\n"));
  EXPECT_TRUE(names_cuda("y = torch.empty(4, device='cuda:0')\n"));
  EXPECT_TRUE(names_cuda("m = Model().cuda()\n"));
  EXPECT_TRUE(names_cuda("s = torch.cuda.current_stream()\n"));
  EXPECT_FALSE(names_cuda("# runs on cuda later\nx = 1\n"));
  EXPECT_FALSE(names_cuda("import tritonish\n"));
  // Every CPU ModelNew the repository ships stays on the CPU (inline C++ included).
  int seen = 0;
  for (const auto& f : fs::directory_iterator(source_dir / "tests/problems/modelnew")) {
    if (f.path().extension() != ".py") continue;
    ++seen;
    EXPECT_FALSE(names_cuda(read(f.path()))) << f.path();
  }
  EXPECT_GT(seen, 10);
}

TEST(python_cuda, the_worker_is_told_the_device_on_a_cuda_task_only) {
  auto rt = find_python_kernel_runtime();
  if (!rt) GTEST_SKIP() << rt.error().message;
  sandbox_options opt;
  opt.worker_exe = fs::path(LATHE_BINARY_DIR) / "lathe-worker";
  const python_stage none;
  auto cuda = python_worker_options(opt, none, platform::cuda);
  ASSERT_TRUE(cuda) << cuda.error().message;
  auto at = std::find(cuda->worker_args.begin(), cuda->worker_args.end(), "--device");
  ASSERT_NE(at, cuda->worker_args.end());
  ASSERT_NE(at + 1, cuda->worker_args.end());
  EXPECT_EQ(*(at + 1), "cuda");
  EXPECT_EQ(cuda->worker_exe, rt->interpreter);
  EXPECT_EQ(cuda->address_space_bytes, 0u);  // CUDA and torch map what they never touch
  auto cpu = python_worker_options(opt, none, platform::cpu);
  ASSERT_TRUE(cpu) << cpu.error().message;
  EXPECT_EQ(std::count(cpu->worker_args.begin(), cpu->worker_args.end(), "--device"), 0);
}

TEST(python_cuda, the_workers_device_path_holds_on_host_memory) {
  auto rt = find_python_kernel_runtime();
  if (!rt) GTEST_SKIP() << rt.error().message;
  int status = 0;
  const std::string out =
      run(rt->interpreter.string() + " -B -s " + (source_dir / "tests/gate/python_cuda_plumbing.py").string() +
              " " + (source_dir / "python").string() + " 2>&1",
          status);
  EXPECT_EQ(status, 0) << out;
  EXPECT_NE(out.find("ok"), std::string::npos) << out;
}

TEST(python_cuda, the_workers_poison_and_windows_are_lathes) {
  // python/lathe_cuda.py writes the patterns the host check reads (core/poison.h) and places
  // windows where lathe's references of the timed calls read them (wire.h window_shift).
  auto rt = find_python_kernel_runtime();
  if (!rt) GTEST_SKIP() << rt.error().message;
  int status = 0;
  const std::string py =
      "import sys; sys.path.insert(0, sys.argv[1]); import lathe_cuda as c; "
      "print(c.POISON['float32'][1], c.POISON['float64'][1], c.POISON['float16'][1], "
      "c.POISON['bfloat16'][1], c.POISON_BYTE, c.window_shift(1024, 3), c.window_shift(768, 9), "
      "c.window_shift(0, 5))";
  const std::string out =
      run(rt->interpreter.string() + " -B -s -c \"" + py + "\" " + (source_dir / "python").string(), status);
  ASSERT_EQ(status, 0) << out;
  std::istringstream in(out);
  uint64_t f32 = 0, f64 = 0, f16 = 0, bf16 = 0, byte = 0, w1 = 0, w2 = 0, w3 = 0;
  in >> f32 >> f64 >> f16 >> bf16 >> byte >> w1 >> w2 >> w3;
  EXPECT_EQ(f32, poison_bits::f32);
  EXPECT_EQ(f64, poison_bits::f64);
  EXPECT_EQ(f16, poison_bits::f16);
  EXPECT_EQ(bf16, poison_bits::bf16);
  EXPECT_EQ(byte, poison_bits::byte);
  EXPECT_EQ(w1, wire::window_shift(1024, 3));
  EXPECT_EQ(w2, wire::window_shift(768, 9));
  EXPECT_EQ(w3, wire::window_shift(0, 5));
}

}  // namespace
