// The lathe binary as a user runs it: exit codes, --help, JSON schemas, errors that name the
// file, line and field, workspace discovery, and a store that hostile kernels cannot change.
#include "lathe_cli_run.h"
#include <cstdint>
#include <gtest/gtest.h>
#include <stdlib.h>
#include <sys/wait.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "core/json.h"
#include "store/store.h"

namespace fs = std::filesystem;

namespace {

using lathe::testing::run_lathe;
using lathe::testing::run_result;

// Its own folder under /tmp and lock folder (lathe_cli_run.h); the workspace is the folder itself.
class cli : public lathe::testing::cli_folder_test {
 protected:
  std::string ws() const { return "--workspace '" + dir_.string() + "'"; }
  const fs::path src_ = LATHE_SOURCE_DIR;
  const std::string axpy_ = std::string(LATHE_SOURCE_DIR) + "/tests/integration/tasks/axpy";
};

}  // namespace

TEST_F(cli, help_answers) {
  auto r = run_lathe("--help");
  EXPECT_EQ(r.code, 0);
  EXPECT_NE(r.out.find("eval"), std::string::npos);
  EXPECT_NE(r.out.find("doctor"), std::string::npos);
  auto e = run_lathe("eval --help");
  EXPECT_EQ(e.code, 0);
  EXPECT_NE(e.out.find("--baseline"), std::string::npos);
  EXPECT_NE(e.out.find("Exit code"), std::string::npos);
  EXPECT_EQ(run_lathe("no-such-verb").code, 2);
  EXPECT_EQ(run_lathe("eval").code, 2);  // missing arguments
}

// A mistyped verb, flag or task name gets the nearest real one; nonsense gets the way to the list.
TEST_F(cli, did_you_mean_for_verbs_flags_and_task_names) {
  auto r = run_lathe("evl a b");
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.err.find("did you mean 'eval'?"), std::string::npos) << r.err;
  r = run_lathe("--workspace /tmp/lathe-dym-ws bnech heldout");
  EXPECT_NE(r.err.find("did you mean 'bench'?"), std::string::npos) << r.err;
  r = run_lathe("qqqqqqqq");
  EXPECT_NE(r.err.find("lathe --help lists them"), std::string::npos) << r.err;
  EXPECT_EQ(r.err.find("did you mean"), std::string::npos) << r.err;
  r = run_lathe("eval softmax naive --quik");
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.err.find("did you mean --quick?"), std::string::npos) << r.err;
  r = run_lathe("eval softmx naive --no-time");
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.err.find("did you mean 'softmax'?"), std::string::npos) << r.err;
}

// A bare .cpp with OpenMP pragmas is built without -fopenmp: lathe says so and how to enable it.
TEST_F(cli, a_bare_cpp_with_openmp_pragmas_gets_a_warning) {
  const fs::path k = fs::temp_directory_path() / "lathe-omp-warning.cpp";
  std::ofstream(k) << "#include <lathe/abi.h>\nextern \"C\" int lathe_launch(const lathe_args* a) {\n"
                      "  const float* x = (const float*)a->inputs[0].data; const float* y = (const float*)a->inputs[1].data;\n"
                      "  float* z = (float*)a->outputs[0].data; const long n = a->inputs[0].shape[0];\n"
                      "#pragma omp parallel for\n  for (long i = 0; i < n; ++i) z[i] = a->scalars[0] * x[i] + y[i];\n"
                      "  return 0;\n}\n";
  auto r = run_lathe("eval " + (fs::path(LATHE_SOURCE_DIR) / "tests/integration/tasks/axpy").string() + " " +
                     k.string() + " --no-time");
  EXPECT_NE(r.err.find("built without -fopenmp"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("flags = [\"-O3\", \"-fopenmp\"]"), std::string::npos) << r.err;
  fs::remove(k);
}

TEST_F(cli, malformed_task_names_file_line_and_field) {
  const fs::path bad = dir_ / "bad/axpy";  // a task's name equals its directory's
  fs::create_directories(bad / "kernels");
  std::ifstream in(axpy_ + "/task.toml");
  std::string text((std::istreambuf_iterator<char>(in)), {});
  text.replace(text.find("dtype = \"float32\""), 17, "dtype = \"floot32\"");
  std::ofstream(bad / "task.toml") << text;
  fs::copy(axpy_ + "/reference.cpp", bad / "reference.cpp");
  fs::copy(axpy_ + "/kernels/naive.cpp", bad / "kernels/naive.cpp");
  auto r = run_lathe(ws() + " eval '" + bad.string() + "' naive");
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.err.find("task.toml:"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("floot32"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("dtype"), std::string::npos) << r.err;
  auto missing = run_lathe(ws() + " eval '" + axpy_ + "' no-such-kernel");
  EXPECT_EQ(missing.code, 2);
  EXPECT_NE(missing.err.find("no-such-kernel"), std::string::npos);
}

TEST_F(cli, json_eval_is_stored_and_hostile_kernels_change_nothing_stored) {
  // --no-aa: this test is about storage; the noise verdict has its own tests.
  auto ok = run_lathe(ws() + " eval '" + axpy_ + "' naive --json --max-time 0.4 --no-aa");
  ASSERT_EQ(ok.code, 0) << ok.out << ok.err;
  auto j = nlohmann::json::parse(ok.out);
  EXPECT_EQ(j["schema"], "lathe.eval/1");
  EXPECT_EQ(j["outcome"], "ok");
  const int64_t first_id = j["id"].get<int64_t>();
  EXPECT_GT(first_id, 0);

  auto db = lathe::store::open(dir_ / ".lathe/lathe.db");
  ASSERT_TRUE(db) << db.error().message;
  auto before = db->get_evaluation(first_id);
  ASSERT_TRUE(before);
  nlohmann::json before_json;
  lathe::to_json(before_json, *before);

  const fs::path hostile = src_ / "tests/integration/hostile";
  for (const char* k : {"write_store.cpp", "segfault.cpp", "mutate_input.cpp", "exit_zero.cpp"}) {
    auto r = run_lathe(ws() + " eval '" + axpy_ + "' '" + (hostile / k).string() + "' --json --no-time");
    EXPECT_EQ(r.code, 1) << k << r.err;
    auto h = nlohmann::json::parse(r.out);
    EXPECT_NE(h["outcome"], "ok") << k;
    EXPECT_GT(h["id"].get<int64_t>(), first_id) << k;  // stored, failure included
  }
  auto after = db->get_evaluation(first_id);
  ASSERT_TRUE(after);
  nlohmann::json after_json;
  lathe::to_json(after_json, *after);
  EXPECT_EQ(before_json, after_json);
  auto list = db->list_evaluations("axpy", 100);
  ASSERT_TRUE(list);
  EXPECT_EQ(list->size(), 5u);
}

// A human eval says on stderr where it is, with the seconds since it began; once the timed
// stage has calibrated both sides, how long a call takes and about how long is left.
TEST_F(cli, progress_lines_carry_the_elapsed_time_and_the_timed_stage_its_estimate) {
  auto r = run_lathe(ws() + " eval '" + axpy_ + "' naive --max-time 0.3 --no-aa");
  ASSERT_NE(r.code, 2) << r.err;
  EXPECT_NE(r.err.find("] check\n"), std::string::npos) << r.err;
  EXPECT_EQ(r.err.rfind("\u2026 [", 0), 0u) << r.err;
  const size_t eta = r.err.find("time: the kernel ");
  ASSERT_NE(eta, std::string::npos) << r.err;
  const std::string line = r.err.substr(eta, r.err.find('\n', eta) - eta);
  EXPECT_NE(line.find(" us a call, "), std::string::npos) << line;
  EXPECT_NE(line.find(" calls a block; the baseline "), std::string::npos) << line;
  EXPECT_NE(line.find(" s left (the paired series)"), std::string::npos) << line;  // --no-aa: no control
}

TEST_F(cli, human_output_and_exit_code_for_a_failure) {
  auto r = run_lathe(ws() + " eval '" + axpy_ + "' '" + (src_ / "tests/integration/hostile/nan_output.cpp").string() +
                 "' --no-time");
  EXPECT_EQ(r.code, 1);
  EXPECT_NE(r.out.find("outcome   nan_or_inf"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("stored    evaluation #"), std::string::npos) << r.out;
}

TEST_F(cli, workspace_is_found_upward_from_a_nested_directory) {
  fs::create_directories(dir_ / ".lathe");
  fs::create_directories(dir_ / "a/b/c");
  auto r = run_lathe("eval '" + axpy_ + "' naive --no-time", dir_ / "a/b/c");
  EXPECT_EQ(r.code, 0) << r.out << r.err;
  EXPECT_TRUE(fs::exists(dir_ / ".lathe/lathe.db"));
  EXPECT_FALSE(fs::exists(dir_ / "a/b/c/.lathe"));
}

TEST_F(cli, doctor_reports_the_machine) {
  auto r = run_lathe(ws() + " doctor --json --no-measure");
  ASSERT_EQ(r.code, 0) << r.err;
  auto j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j["schema"], "lathe.doctor/1");
  EXPECT_EQ(j["target"]["arch"].get<std::string>().rfind("x86-64", 0), 0u);
  EXPECT_TRUE(j["openmp"].get<bool>());
  auto h = run_lathe(ws() + " doctor --no-measure");
  EXPECT_NE(h.out.find("no GPU"), std::string::npos) << h.out;
}

TEST_F(cli, doctor_without_a_gpu_says_so_and_still_lists_the_cuda_tools) {
  if (fs::exists("/dev/nvidiactl")) GTEST_SKIP() << "this machine has an NVIDIA device";
  auto r = run_lathe(ws() + " doctor --json --no-measure");
  ASSERT_EQ(r.code, 0) << r.err;
  auto j = nlohmann::json::parse(r.out);
  EXPECT_FALSE(j["gpu"].get<bool>());
  EXPECT_TRUE(j["gpu_target"].is_null());
  EXPECT_TRUE(j["gpu_snapshot"].is_null());
  EXPECT_EQ(j["gpu_error"], "");
  for (const char* tool : {"nvcc", "ncu", "compute-sanitizer", "cuobjdump", "nsys"}) {
    ASSERT_TRUE(j["cuda_tools"].contains(tool)) << tool;
    const auto& t = j["cuda_tools"][tool];
    // Present: where and which version; absent: null.
    if (!t.is_null()) {
      EXPECT_TRUE(fs::exists(t["path"].get<std::string>())) << tool;
      EXPECT_FALSE(t["version"].get<std::string>().empty()) << tool;
    }
  }
  EXPECT_EQ(j["cuda_tools"]["nvcc"].is_null(), j["nvcc"].get<std::string>().empty());
  auto h = run_lathe(ws() + " doctor --no-measure");
  ASSERT_EQ(h.code, 0) << h.err;
  EXPECT_NE(h.out.find("gpu        no GPU on this machine"), std::string::npos) << h.out;
  EXPECT_NE(h.out.find("nvcc       "), std::string::npos) << h.out;
  for (const char* tool : {"ncu", "compute-sanitizer", "cuobjdump", "nsys"})
    EXPECT_NE(h.out.find(std::string(" ") + tool + " "), std::string::npos) << tool << "\n" << h.out;
}
