// Every bad behaviour of PROTOCOL.md that applies to CPU kernels, each a real kernel in
// tests/integration/hostile/ whose first line names the outcome the gate must give. Each is
// built and run for real; lathe must survive all of them.
#include <gtest/gtest.h>

#include <fstream>

#include "core/outcome.h"
#include "gate_fixture.h"

namespace fs = std::filesystem;
using namespace lathe;

namespace {

using lathe_gate_env = lathe::testing::gate_env;

// Kernels whose bad behaviour shows only while timed.
bool needs_timing(const std::string& name) {
  return name == "lazy_when_timed" || name == "skip_when_written";
}

// Kernels evaluated alone (instantiation `cpu`, ctest hostile_test, label timed) although nothing
// of theirs is timed: their verdict depends on the machine's scheduling. A thread left spinning
// shows only when it is scheduled while lathe watches the idle worker, which a parallel neighbour
// can prevent (python_kernel_test's background_thread read ok under -j2 on a loaded VM); the
// unbounded allocation must reach the memory limit, not its 60 s watchdog, at page-fault speed.
bool needs_quiet(const std::string& name) {
  return needs_timing(name) || name == "background_thread" || name == "unbounded_alloc";
}

class hostile : public lathe::testing::gate_env, public ::testing::WithParamInterface<std::string> {};

}  // namespace

TEST_P(hostile, rejected_with_its_own_outcome) {
  const fs::path file = lathe::testing::source_dir() / "tests/integration/hostile" / (GetParam() + ".cpp");
  const std::string want = lathe::testing::expected_outcome(file);
  ASSERT_FALSE(want.empty()) << file;
  setenv("OPENAI_API_KEY", "sk-test-secret-never-visible", 1);
  task t = load(lathe::testing::source_dir() / "tests/integration/tasks/axpy");
  // Touching its 2 GiB of address space took 7-10 s on a 2-core VM (page faults at 250 MB/s):
  // the memory limit, not the 3 s watchdog, must be what ends it.
  if (GetParam() == "unbounded_alloc") cfg_.call_timeout_s = 60;
  // Each kernel in the instantiation that matches it: cpu_untimed runs beside other tests.
  const std::string suite = ::testing::UnitTest::GetInstance()->current_test_info()->test_suite_name();
  EXPECT_EQ(suite == "cpu/hostile", needs_quiet(GetParam()))
      << GetParam() << " is in the wrong instantiation (" << suite << "): see needs_quiet";
  evaluation e = eval(t, kernel(file), needs_timing(GetParam()));
  EXPECT_EQ(std::string(to_string(e.result)), want) << GetParam() << ": " << e.message << "\n" << e.diagnostics;
  EXPECT_FALSE(e.message.empty());
  EXPECT_EQ(e.message.find("sk-test-secret"), std::string::npos);
  EXPECT_EQ(e.diagnostics.find("sk-test-secret"), std::string::npos);
}

// Two instantiations, two ctest tests (tests/integration/CMakeLists.txt): `cpu` alone with the
// timed tests, `cpu_untimed` (checks only, deterministic verdicts) in parallel with the others.
INSTANTIATE_TEST_SUITE_P(
    cpu, hostile,
    ::testing::Values("unbounded_alloc", "background_thread", "lazy_when_timed", "skip_when_written"),
    [](const auto& info) { return info.param; });
INSTANTIATE_TEST_SUITE_P(
    cpu_untimed, hostile,
    ::testing::Values("compile_error", "no_launch", "wrong_abi", "segfault", "hang", "exit_zero",
                      "abort_call", "oob_write", "mutate_input", "unwritten", "nan_output", "cached",
                      "one_shape", "getenv_secret", "parent_environ", "write_store", "zeros_when_tiny",
                      "timer_patch", "half_precision", "bf16_rounding", "kernel_error"),
    [](const auto& info) { return info.param; });

TEST_F(lathe_gate_env, messages_say_what_went_wrong) {
  task t = load(lathe::testing::source_dir() / "tests/integration/tasks/axpy");
  auto dir = lathe::testing::source_dir() / "tests/integration/hostile";
  evaluation compile = eval(t, kernel(dir / "compile_error.cpp"), false);
  EXPECT_NE(compile.diagnostics.find("undeclared_thing"), std::string::npos) << compile.diagnostics;
  evaluation abi = eval(t, kernel(dir / "wrong_abi.cpp"), false);
  EXPECT_NE(abi.message.find("ABI version 2"), std::string::npos) << abi.message;
  evaluation ex = eval(t, kernel(dir / "exit_zero.cpp"), false);
  EXPECT_NE(ex.message.find("exited with code 0"), std::string::npos) << ex.message;
  evaluation ab = eval(t, kernel(dir / "abort_call.cpp"), false);
  EXPECT_NE(ab.message.find("SIGABRT"), std::string::npos) << ab.message;
  evaluation one = eval(t, kernel(dir / "one_shape.cpp"), false);
  EXPECT_NE(one.message.find("'large'"), std::string::npos) << one.message;
  evaluation env = eval(t, kernel(dir / "getenv_secret.cpp"), false);
  EXPECT_NE(env.message.find("getenv"), std::string::npos) << env.message;
  evaluation err = eval(t, kernel(dir / "kernel_error.cpp"), false);
  EXPECT_NE(err.message.find("shape not supported"), std::string::npos) << err.message;
}

// A baseline that does not build is the task's problem, not the candidate's (PROTOCOL.md "The
// machine is not the kernel"): `infra_error`, said as a task problem, where it read
// `compile_error`, which every summary counted as the candidate failing its build; tried once
// more, as any infra_error.
TEST_F(lathe_gate_env, a_baseline_that_does_not_build_is_not_the_candidates_compile_error) {
  task t = load(lathe::testing::source_dir() / "tests/integration/tasks/axpy");
  gate::gate_request req;
  req.t = &t;
  req.candidate = kernel(lathe::testing::source_dir() / "tests/integration/tasks/axpy/kernels/naive.cpp");
  req.baseline = kernel(lathe::testing::source_dir() / "tests/integration/hostile/compile_error.cpp");
  req.prov = {"human", "test", false};
  gate::gate_config cfg = cfg_;
  cfg.time = true;
  const evaluation e = gate::evaluate(cfg, req);
  EXPECT_EQ(e.result, outcome::infra_error) << e.message;
  EXPECT_NE(e.message.find("does not compile (a task problem)"), std::string::npos) << e.message;
  EXPECT_TRUE(built(e.result));  // counted as built: the candidate's own build went through
  EXPECT_NE(e.diagnostics.find("infra_error, retried: the baseline"), std::string::npos) << e.diagnostics;
}

TEST_F(lathe_gate_env, a_good_kernel_passes_and_the_naive_baseline_is_not_faster_than_itself) {
  task t = load(lathe::testing::source_dir() / "tests/integration/tasks/axpy");
  // The verdict `unstable` is not what this test is about: a DRAM-bound kernel's A/A on a
  // loaded 2-core VM can reach 20%.
  cfg_.policy.aa_unstable = 1.0;
  evaluation e = eval(t, kernel(lathe::testing::source_dir() / "tests/integration/tasks/axpy/kernels/naive.cpp"), true);
  ASSERT_EQ(e.result, outcome::ok) << e.message;
  ASSERT_TRUE(e.paired && e.aa);
  // The same kernel against itself: the interval must contain 1 (A/A by construction).
  EXPECT_LT(e.paired->ci_low, 1.0 + 0.05);
  EXPECT_GT(e.paired->ci_high, 1.0 - 0.05);
  EXPECT_GE(e.checks.size(), 6u);  // 2 shape sets x 3 seeds, plus the slots after timing
  ASSERT_TRUE(e.roofline_fraction);
  EXPECT_GT(*e.roofline_fraction, 0.0);
  EXPECT_LE(*e.roofline_fraction, 1.0 / e.policy.roofline_slack);
}

// An A/A interval reaching further from 1 than the policy allows is the gate declining to decide,
// `unstable`, with the interval in its message; correct kernels only (the checks came first).
TEST_F(lathe_gate_env, an_aa_interval_past_the_threshold_is_unstable) {
  task t = load(lathe::testing::source_dir() / "tests/integration/tasks/axpy");
  cfg_.policy.aa_unstable = 1e-12;  // no measured interval of identical kernels is that tight
  evaluation e = eval(t, kernel(lathe::testing::source_dir() / "tests/integration/tasks/axpy/kernels/naive.cpp"), true);
  EXPECT_EQ(e.result, outcome::unstable) << e.message;
  EXPECT_NE(e.message.find("A/A interval ["), std::string::npos) << e.message;
  ASSERT_TRUE(e.aa);
  EXPECT_GT(std::max(e.aa->ci_high - 1, 1 - e.aa->ci_low), 1e-12);
  EXPECT_FALSE(e.checks.empty());
  for (const auto& c : e.checks) EXPECT_TRUE(c.passed) << c.shape_set;
}

// The roofline floor is taken for the level of memory the working set lives in (PROTOCOL.md).
// In the LLC the rate is never below DRAM's: a VM whose sysfs names the host's 300 MiB L3 read
// its "in-LLC" sweep below its DRAM one, and that reading made honest kernels suspicious.
TEST_F(lathe_gate_env, an_in_cache_reading_below_dram_does_not_raise_the_floor) {
  task t = load(lathe::testing::source_dir() / "tests/integration/tasks/axpy");
  cfg_.policy.aa_unstable = 1.0;
  cfg_.tgt.llc_bytes = uint64_t{1} << 30;  // every rotated slot (4 x 12 MiB) counts as in cache
  cfg_.tgt.cache_bytes_per_s = cfg_.tgt.copy_bytes_per_s / 100;
  evaluation e = eval(t, kernel(lathe::testing::source_dir() / "tests/integration/tasks/axpy/kernels/naive.cpp"), true);
  // The floor is judged before the A/A control: a control that found the machine too noisy to
  // decide (on a 2-core VM without cache topology in sysfs it read [0.67, 2.41] in 3 of 8 runs,
  // before and after issue 43's step 11) says nothing about it. Never suspicious, never refused.
  if (!(e.result == outcome::unstable && e.message.find("A/A interval [") != std::string::npos))
    EXPECT_EQ(e.result, outcome::ok) << e.message;
  ASSERT_TRUE(e.roofline_fraction);
  EXPECT_LE(*e.roofline_fraction, 1.0 / e.policy.roofline_slack);
}

// A working set that fits one core's L2 is floored by the measured L2 ceiling, and by none where
// that is not measured; one past L2 by the LLC or DRAM one. Each case is set up with ceilings far
// too low for an honest kernel to pass the floor that applies.
TEST_F(lathe_gate_env, a_working_set_within_l2_is_floored_by_the_l2_ceiling) {
  const uint64_t l2 = gate::cpu_l2_bytes();
  if (l2 < (uint64_t{256} << 10)) GTEST_SKIP() << "no L2 of 256 KiB or more named in sysfs";
  ASSERT_GT(cfg_.tgt.l2_bytes_per_s, cfg_.tgt.copy_bytes_per_s) << "the L2 ceiling was not measured";
  const fs::path src = lathe::testing::source_dir() / "tests/integration/tasks/axpy";
  const fs::path small = dir_ / "small" / "axpy";  // a task's directory is named as the task
  fs::create_directories(small);
  fs::copy(src, small, fs::copy_options::recursive);
  std::ifstream in(src / "task.toml");
  std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  const std::string large = "N = 1048576";
  ASSERT_NE(text.find(large), std::string::npos);
  text.replace(text.find(large), large.size(), "N = 4096");  // 48 KiB a slot, 4 slots
  std::ofstream(small / "task.toml") << text;
  const task in_l2 = load(small);
  const kernel_bundle naive = kernel(small / "kernels/naive.cpp");
  cfg_.policy.aa_unstable = 1.0;
  cfg_.remeasure_ceilings = false;  // the ceilings set here are the point: not measured again
  cfg_.tgt.copy_bytes_per_s = cfg_.tgt.cache_bytes_per_s = 1e3;  // 1 KB/s: such a floor is seconds
  // A block's working set is its pools and the output areas of its calls (time_cpu.cpp), sized to
  // pass twice the LLC: with the LLC named as L2 and blocks of about 20 us (some 20 calls of
  // 1 us), one pool and 20 areas of 16 KiB fit this VM's 1 MiB L2. With the defaults (16 pools,
  // 2,048 areas, 32 MiB) no working set fits any L2, and CI of 665407a failed here.
  cfg_.tgt.llc_bytes = l2;
  cfg_.policy.block_seconds = 2e-5;
  // The naive kernel against itself: above every floor, so `ok`, or `unstable` where the loaded
  // machine leaves the A/A control too wide to decide (seen at a load of 7): never refused.
  auto above_the_floor = [](outcome o) { return o == outcome::ok || o == outcome::unstable; };
  evaluation measured = eval(in_l2, naive, true);
  EXPECT_PRED1(above_the_floor, measured.result) << measured.message;
  const double l2_rate = cfg_.tgt.l2_bytes_per_s;
  cfg_.tgt.l2_bytes_per_s = 1e3;
  evaluation slow_l2 = eval(in_l2, naive, true);
  EXPECT_EQ(slow_l2.result, outcome::suspicious_speed) << slow_l2.message;
  cfg_.tgt.l2_bytes_per_s = 0;
  evaluation unmeasured = eval(in_l2, naive, true);
  EXPECT_PRED1(above_the_floor, unmeasured.result) << unmeasured.message;
  cfg_.tgt.l2_bytes_per_s = l2_rate;
  evaluation past_l2 = eval(load(src), kernel(src / "kernels/naive.cpp"), true);
  EXPECT_EQ(past_l2.result, outcome::suspicious_speed) << past_l2.message;
}

// Issue 42: an honest two-thread row sum reading 64 MB at 75.6 GB/s was refused by a floor built
// from ceilings of 49-54 GB/s, measured on a loaded machine. Below the floor twice, the ceilings
// are measured again before the kernel is blamed: stored ceilings far too low (1 KB/s) no longer
// refuse an honest kernel.
TEST_F(lathe_gate_env, a_floor_from_ceilings_measured_too_low_is_measured_again_before_it_refuses) {
  const fs::path src = lathe::testing::source_dir() / "tests/integration/tasks/axpy";
  cfg_.policy.aa_unstable = 1.0;
  cfg_.tgt.copy_bytes_per_s = cfg_.tgt.cache_bytes_per_s = 1e3;
  ASSERT_TRUE(cfg_.remeasure_ceilings);
  evaluation e = eval(load(src), kernel(src / "kernels/naive.cpp"), true);
  // unstable: the A/A control of a loaded machine may leave the speed undecided, never refused.
  EXPECT_TRUE(e.result == outcome::ok || e.result == outcome::unstable) << to_string(e.result) << ": " << e.message;
  EXPECT_NE(e.diagnostics.find("above the floor of ceilings measured again"), std::string::npos) << e.diagnostics;
  ASSERT_TRUE(e.roofline_fraction);
  EXPECT_LE(*e.roofline_fraction, 1.0 / e.policy.roofline_slack);
}
