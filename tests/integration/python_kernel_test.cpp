// Python kernels (gate/python_kernel.h, python/lathe_kernel.py): a kernel written as a Python file
// defining launch(inputs, outputs, scalars) on torch tensors runs in its own de-privileged worker
// that speaks lathe-worker's protocol, and every way it can go wrong is its own outcome. Each
// kernel in tests/problems/python names the outcome it must get on its first line. The checks
// time nothing (`unit`); the paired decision against the C++ baseline is timed (`integration`,
// alone: --gtest_filter=python_timed.*).
#include <gtest/gtest.h>

#include <cstddef>
#include <cstdlib>
#include <fstream>

#include "core/outcome.h"
#include "gate/host_target.h"
#include "gate/python_kernel.h"
#include "gate_fixture.h"
#include "lathe_cli_json.h"
#include "lathe_cli_run.h"

namespace fs = std::filesystem;

namespace lathe::testing {
namespace {

fs::path kernels() { return source_dir() / "tests/problems/python"; }

class python_kernel : public gate_env, public ::testing::WithParamInterface<std::string> {};

TEST_P(python_kernel, gets_its_own_outcome) {
  const fs::path file = kernels() / (GetParam() + ".py");
  const std::string want = expected_outcome(file, "# expect: ");
  ASSERT_FALSE(want.empty()) << file;
  setenv("OPENAI_API_KEY", "sk-test-secret-never-visible", 1);
  // torch_forbidden runs on the task that does not allow torch, getattr_mm and aten_mm on the
  // gemm task (no libraries either); the rest on the one that allows torch.
  const std::string name = GetParam();
  const bool gemm = name == "getattr_mm" || name == "aten_mm" || name == "patches_observer" ||
                    name == "edits_op_log" || name == "replaces_op_record" || name == "forges_op_record" ||
                    name == "pops_mode_in_call" || name == "switches_off_record_function";
  task t = load(gemm ? source_dir() / "tasks/gemm"
                     : source_dir() / "tests" /
                           (GetParam() == "torch_forbidden" ? "problems/scale_relu" : "integration/tasks/scale_relu_torch"));
  evaluation e = eval(t, kernel(file), false);
  EXPECT_EQ(std::string(to_string(e.result)), want) << GetParam() << ": " << e.message << "\n"
                                                    << e.diagnostics;
  EXPECT_FALSE(e.message.empty());
  EXPECT_EQ(e.message.find("sk-test-secret"), std::string::npos);
  EXPECT_EQ(e.diagnostics.find("sk-test-secret"), std::string::npos);
  if (GetParam() == "raises") {
    EXPECT_NE(e.message.find("this kernel refuses its inputs"), std::string::npos) << e.message;
  }
  if (GetParam() == "reads_outside") {
    EXPECT_NE(e.message.find("Permission denied"), std::string::npos) << e.message;
  }
  if (GetParam() == "syntax_error") {
    EXPECT_NE(e.message.find("syntax error at line 4"), std::string::npos) << e.message;
  }
  if (GetParam() == "no_launch") {
    EXPECT_NE(e.message.find("defines no launch(inputs, outputs, scalars)"), std::string::npos) << e.message;
  }
  // Refused for what ran, not for a name in the source (python/lathe_ops.py).
  if (name == "getattr_mm" || name == "aten_mm") {
    EXPECT_NE(e.message.find("aten::mm ran"), std::string::npos) << e.message;
  }
  if (name == "patches_observer") {
    EXPECT_NE(e.message.find("the candidate changed lathe's worker (Observer.verify)"), std::string::npos)
        << e.message;
  }
  // Seen in lathe's record (gate/cpu/op_record.h), not in the worker's log the kernel rewrote.
  if (name == "edits_op_log") {
    EXPECT_NE(e.message.find("aten::mm ran (lathe's record"), std::string::npos) << e.message;
  }
  // Within one call, past the dispatch mode (popped and pushed back) and torch's own switches for
  // record functions (removed before the candidate exists): seen by the dispatcher's callback.
  if (name == "pops_mode_in_call" || name == "switches_off_record_function") {
    EXPECT_NE(e.message.find("aten::mm ran (lathe's record"), std::string::npos) << e.message;
    EXPECT_NE(e.diagnostics.find("torch ops: recorded from torch's dispatcher"), std::string::npos)
        << e.diagnostics;
  }
  if (name == "replaces_op_record") {
    EXPECT_NE(e.message.find("forbidden system call"), std::string::npos) << e.message;
  }
  if (name == "forges_op_record") {
    EXPECT_NE(e.message.find("wrote to lathe's record of its torch operations"), std::string::npos) << e.message;
  }
}

INSTANTIATE_TEST_SUITE_P(cpu, python_kernel,
                         ::testing::Values("ok", "wrong", "mutates_input", "rebinds_output", "cached",
                                           "raises", "syntax_error", "no_launch", "exits", "hangs",
                                           "socket_call", "reads_outside", "background_thread",
                                           "torch_forbidden", "getattr_mm", "aten_mm", "patches_observer",
                                           "edits_op_log", "replaces_op_record", "forges_op_record",
                                           "pops_mode_in_call", "switches_off_record_function"),
                         [](const auto& info) { return info.param; });

TEST_F(gate_env, python_kernel_worker_is_confined_and_says_so) {
  task t = load(source_dir() / "tests/integration/tasks/scale_relu_torch");
  evaluation e = eval(t, kernel(kernels() / "ok.py"), false);
  ASSERT_EQ(e.result, outcome::ok) << e.message << "\n" << e.diagnostics;
  // Landlock is there on this machine's kernel (the C++ worker's tests assume it too): a Python
  // kernel that is not confined says so in the diagnostics, as lathe-worker's does.
  EXPECT_EQ(e.diagnostics.find("not confined"), std::string::npos) << e.diagnostics;
  EXPECT_NE(e.reference_runtime.find("torch "), std::string::npos);
  // torch's CPU kernels inside the worker are the ones it uses outside: chosen before the
  // confinement, since after it cpuinfo cannot read /proc/cpuinfo and torch fell back to its
  // scalar kernels ("NO AVX": eager baselines 2-3x slower than a user's PyTorch, 2026-12-07).
  auto rt = gate::find_python_kernel_runtime();
  ASSERT_TRUE(rt) << rt.error().message;
  const run_result plain = run_shell(
      "'" + rt->interpreter.string() + "' -c \"import torch; print([l.split(':', 1)[1].strip() for l in "
      "torch.__config__.show().splitlines() if 'CPU capability usage:' in l][0])\"",
      fs::temp_directory_path() / ("lathe-capability-" + std::to_string(getpid())));
  ASSERT_EQ(plain.code, 0) << plain.err;
  const std::string outside = plain.out.substr(0, plain.out.find_last_not_of("\n") + 1);
  EXPECT_NE(e.diagnostics.find("torch CPU kernels: " + outside), std::string::npos)
      << "outside the worker torch uses " << outside << "\n" << e.diagnostics;
}

TEST_F(gate_env, a_python_kernel_on_a_cuda_task_is_refused_with_the_reason) {
  // A Python kernel runs on a CUDA task where there is a device (python/lathe_cuda.py); here there
  // is none: screened, then refused, saying why (tests/gpu/modelnew_gpu_test runs them).
  if (gate::has_cuda_device()) GTEST_SKIP() << "a CUDA device here: modelnew_gpu_test runs Python kernels on it";
  task t = load(source_dir() / "tests/integration/tasks/axpy_cuda");
  evaluation e = eval(t, kernel(kernels() / "raises.py"), false);  // no torch: past the screen
  EXPECT_EQ(e.result, outcome::unsupported_target) << e.message;
  EXPECT_NE(e.message.find("python kernel for a cuda task passed the screen"), std::string::npos) << e.message;
  EXPECT_NE(e.message.find("no CUDA device on this machine"), std::string::npos) << e.message;
  // What the screen refuses is refused before: the device is not what decides it.
  evaluation f = eval(t, kernel(kernels() / "syntax_error.py"), false);
  EXPECT_EQ(f.result, outcome::forbidden) << f.message;
  EXPECT_NE(f.message.find("syntax error at line 4"), std::string::npos) << f.message;
}

// The wire structures python/lathe_wire.py mirrors: sizes and offsets as this compiler lays them.
TEST(python_wire, layout_matches_the_cpp_header) {
  auto rt = gate::find_python_kernel_runtime();
  ASSERT_TRUE(rt) << rt.error().message;
  const std::string cmd = rt->interpreter.string() + " -B -s " +
                          (source_dir() / "python/lathe_wire.py").string();
  FILE* p = popen(cmd.c_str(), "r");
  ASSERT_NE(p, nullptr);
  std::string out;
  char buf[4096];
  while (size_t n = fread(buf, 1, sizeof buf, p)) out.append(buf, n);
  ASSERT_EQ(pclose(p), 0) << out;
  const auto j = nlohmann::json::parse(out);
  using wire::command, wire::reply, wire::tensor_desc;
  EXPECT_EQ(j.at("command").get<size_t>(), sizeof(command));
  EXPECT_EQ(j.at("reply").get<size_t>(), sizeof(reply));
  EXPECT_EQ(j.at("tensor_desc").get<size_t>(), sizeof(tensor_desc));
#define LATHE_AT(s, f) EXPECT_EQ(j.at(#s "." #f).get<size_t>(), offsetof(s, f)) << #s "." #f
  LATHE_AT(command, kind);
  LATHE_AT(command, num_slots);
  LATHE_AT(command, slot_stride);
  LATHE_AT(command, table_offset);
  LATHE_AT(command, table_entries);
  LATHE_AT(command, tensors);
  LATHE_AT(command, scalars);
  LATHE_AT(command, first_slot);
  LATHE_AT(command, rotate);
  LATHE_AT(command, window);
  LATHE_AT(command, calls);
  LATHE_AT(command, graph);
  LATHE_AT(command, protocol);
  LATHE_AT(command, rep_ms);
  LATHE_AT(tensor_desc, shape);
  LATHE_AT(tensor_desc, offset);
  LATHE_AT(tensor_desc, bytes);
  LATHE_AT(tensor_desc, dist_kind);
  LATHE_AT(tensor_desc, slack);
  LATHE_AT(reply, st);
  LATHE_AT(reply, code);
  LATHE_AT(reply, calls_done);
  LATHE_AT(reply, workspace_bytes);
  LATHE_AT(reply, device_seconds);  // python/lathe_cuda.py: on CUDA tasks
  LATHE_AT(reply, graph_used);
  LATHE_AT(reply, graph_nodes);
  LATHE_AT(reply, graph_captured);
  LATHE_AT(reply, outputs);
  LATHE_AT(reply, bench);
  LATHE_AT(reply, message);
#undef LATHE_AT
}

// Timed: the Python kernel against the task's C++ naive baseline, a paired decision with the A/A
// control, through the same arena as any CPU kernel; and through `lathe eval` as a user runs it.
class python_timed : public gate_env {};

TEST_F(python_timed, a_python_kernel_gets_a_paired_decision_against_a_cpp_baseline) {
  task t = load(source_dir() / "tests/integration/tasks/scale_relu_torch");
  evaluation e = eval(t, kernel(kernels() / "ok.py"), true);
  ASSERT_TRUE(e.result == outcome::ok || e.result == outcome::unstable) << e.message << "\n" << e.diagnostics;
  ASSERT_TRUE(e.paired.has_value()) << e.message;
  ASSERT_TRUE(e.aa.has_value()) << e.message;
  EXPECT_GT(e.paired->ratio, 0);
  EXPECT_FALSE(e.paired->a_seconds.empty());
  EXPECT_TRUE(e.decision.has_value());
}

TEST(python_cli, lathe_eval_takes_a_python_kernel_file) {
  unsetenv("LATHE_LOCK_DIR");
  const fs::path dir = source_dir() / "tests/problems";
  auto r = run_lathe("--workspace /tmp/lathe-python-cli-ws eval " + (source_dir() / "tests/integration/tasks/scale_relu_torch").string() +
                     " " + (kernels() / "ok.py").string() + " --quick --json");
  nlohmann::json j = parse_json(r);
  ASSERT_TRUE(j.contains("paired")) << r.out << r.err;
  EXPECT_TRUE(j["outcome"] == "ok" || j["outcome"] == "unstable") << j["outcome"];
  EXPECT_EQ(r.code, j["outcome"] == "ok" ? 0 : 3);  // unstable has its own exit code
  // The same kernel on the task that does not allow torch: refused before it runs.
  r = run_lathe("--workspace /tmp/lathe-python-cli-ws eval " + (dir / "scale_relu").string() + " " +
                (kernels() / "ok.py").string() + " --json");
  j = parse_json(r);
  EXPECT_EQ(j["outcome"], "forbidden") << r.out << r.err;
  EXPECT_NE(r.code, 0);
}

}  // namespace
}  // namespace lathe::testing
