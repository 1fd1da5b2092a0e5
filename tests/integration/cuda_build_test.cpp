// The compile stage of CUDA kernels, on any machine with nvcc (CI has no GPU): screening of the
// CUDA ABI rules, compile errors with nvcc's log, the ptxas resource report and the PTX.
#include <gtest/gtest.h>

#include <fstream>

#include "core/outcome.h"
#include "gate_fixture.h"

namespace fs = std::filesystem;
using namespace lathe;

namespace {

class cuda_env : public lathe::testing::gate_env {
 protected:
  void SetUp() override {
    gate_env::SetUp();
    if (cfg_.tools.nvcc.empty()) GTEST_SKIP() << "no nvcc on this machine";
  }
};

class cuda_build : public cuda_env, public ::testing::WithParamInterface<std::string> {};

const fs::path task_dir = lathe::testing::source_dir() / "tests/integration/tasks/axpy_cuda";

}  // namespace

TEST_P(cuda_build, hostile_kernel_rejected_at_compile_stage) {
  const fs::path file = lathe::testing::source_dir() / "tests/integration/hostile_cuda" / (GetParam() + ".cu");
  task t = load(task_dir);
  evaluation e = eval(t, kernel(file), false);
  EXPECT_EQ(std::string(to_string(e.result)), lathe::testing::expected_outcome(file)) << e.message << "\n" << e.diagnostics;
}

INSTANTIATE_TEST_SUITE_P(cuda, cuda_build,
                         ::testing::Values("compile_error", "allocates", "side_stream", "persistent_l2",
                                           "default_stream", "per_thread_stream",
                                           "l2_launch_attribute", "l2_set_aside",
                                           "driver_entry_point", "forge_ipc", "driver_api"),
                         [](const auto& info) { return info.param; });

// The hostile kernels of tests/gpu/hostile are refused at run time (tests/gpu/cuda_gate_test.cpp),
// so they must get through the screen and build: a kernel the text screen catches would test the
// screen instead of the run-time defence it was written for (read_other: the sandbox;
// persistent_kernel: the device-wide synchronization). Without a device the gate stops right after
// the build, with unsupported_target.
TEST_F(cuda_env, gpu_hostile_kernels_pass_the_screen_and_build) {
  if (fs::exists("/dev/nvidiactl")) GTEST_SKIP() << "a device is present: cuda_gate_test runs them";
  task t = load(task_dir);
  size_t seen = 0;
  for (const auto& f : fs::directory_iterator(lathe::testing::source_dir() / "tests/gpu/hostile")) {
    if (f.path().extension() != ".cu") continue;
    ++seen;
    evaluation e = eval(t, kernel(f.path()), false);
    EXPECT_EQ(e.result, outcome::unsupported_target)
        << f.path().filename() << ": " << to_string(e.result) << ": " << e.message << "\n" << e.diagnostics;
  }
  EXPECT_GE(seen, 11u);
}

TEST_F(cuda_env, good_kernel_builds_with_its_resource_report_and_ptx) {
  task t = load(task_dir);
  evaluation e = eval(t, kernel(task_dir / "kernels/naive"), false);
  // Built and screened; running it needs a device and the CUDA worker.
  EXPECT_EQ(e.result, outcome::unsupported_target) << e.message;
  EXPECT_NE(e.message.find("builds for sm_90a"), std::string::npos) << e.message;
  ASSERT_EQ(e.resources.size(), 1u) << e.diagnostics;
  EXPECT_NE(e.resources[0].function.find("axpy"), std::string::npos);
  EXPECT_GT(e.resources[0].registers, 0);
  EXPECT_EQ(e.resources[0].spill_stores, 0);
  EXPECT_NE(e.ptx.find(".entry"), std::string::npos);
  EXPECT_NE(e.ptx.find("sm_90a"), std::string::npos);
  // The second build is a cache hit with the same report and PTX.
  evaluation again = eval(t, kernel(task_dir / "kernels/naive"), false);
  ASSERT_EQ(again.resources.size(), 1u);
  EXPECT_EQ(again.resources[0].registers, e.resources[0].registers);
  EXPECT_EQ(again.ptx, e.ptx);
}

TEST(ptxas_report, parses_every_field_of_every_function) {
  const std::string log =
      "ptxas info    : 0 bytes gmem\n"
      "ptxas info    : Compiling entry function '_Z1fPf' for 'sm_90a'\n"
      "ptxas info    : Function properties for _Z1fPf\n"
      "    16 bytes stack frame, 8 bytes spill stores, 4 bytes spill loads\n"
      "ptxas info    : Used 168 registers, used 1 barriers, 49152 bytes smem, 368 bytes cmem[0]\n"
      "ptxas info    : Compiling entry function '_Z1gv' for 'sm_90a'\n"
      "ptxas info    : Used 8 registers\n";
  auto r = gate::parse_ptxas_report(log);
  ASSERT_EQ(r.size(), 2u);
  EXPECT_EQ(r[0].function, "_Z1fPf");
  EXPECT_EQ(r[0].registers, 168);
  EXPECT_EQ(r[0].shared_bytes, 49152);
  EXPECT_EQ(r[0].stack_bytes, 16);
  EXPECT_EQ(r[0].spill_stores, 8);
  EXPECT_EQ(r[0].spill_loads, 4);
  EXPECT_EQ(r[1].registers, 8);
  EXPECT_EQ(r[1].shared_bytes, 0);
}
