// `lathe profile` as a user runs it, on any machine: its help, and what happens without Nsight
// Compute (a clear message naming what to install, exit code 3, nothing stored) or with bad
// arguments. Profiling itself needs a GPU: tests/gpu/profile_gpu_test.cpp.
#include <gtest/gtest.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iterator>

#include "gate/profile.h"
#include "lathe_cli_run.h"
#include "store/raw_db.h"

namespace fs = std::filesystem;

namespace {

using lathe::testing::run_result;

// `env` is put before the command (VAR=value …), so that PATH can be changed for lathe only.
run_result run_lathe(const std::string& args, const std::string& env = "") {
  const fs::path err =
      fs::temp_directory_path() / ("lathe-profile-cli-err-" + std::to_string(getpid()));
  return lathe::testing::run_shell(env + " '" + LATHE_BINARY_DIR + "/lathe' " + args, err);
}

// Its own folder under /tmp and lock folder (lathe_cli_run.h); the workspace is the folder itself.
class profile_cli : public lathe::testing::cli_folder_test {
 protected:
  void SetUp() override {
    cli_folder_test::SetUp();
    fs::create_directories(dir_ / "empty-bin");
  }
  std::string ws() const { return "--workspace '" + dir_.string() + "'"; }
  long long profiles_stored() const {
    const fs::path db = dir_ / ".lathe/lathe.db";
    if (!fs::exists(db)) return 0;
    auto raw = lathe::testing::open_raw(db);
    return lathe::testing::query_int(raw.get(), "SELECT count(*) FROM profiles");
  }
};

}  // namespace

TEST_F(profile_cli, help_answers_and_says_what_is_measured) {
  auto r = run_lathe("profile --help");
  EXPECT_EQ(r.code, 0);
  for (const char* s : {"--shape", "--launches", "--json", "--ncu", "--clock-control none",
                        "Nothing is timed", "Exit code", "3"})
    EXPECT_NE(r.out.find(s), std::string::npos) << s << "\n" << r.out;
  // The verb is listed; the child ncu runs is not.
  auto all = run_lathe("--help");
  EXPECT_NE(all.out.find("profile"), std::string::npos);
  EXPECT_EQ(all.out.find("profile-run"), std::string::npos) << all.out;
  EXPECT_EQ(run_lathe("profile").code, 2);  // missing arguments
}

TEST_F(profile_cli, without_ncu_it_says_what_to_install_and_stores_nothing) {
  // PATH without ncu. Where ncu sits in one of the fixed places (a GPU machine with the
  // toolkit), PATH cannot hide it; --ncu below covers that case.
  const std::string path = "PATH='" + (dir_ / "empty-bin").string() + ":/usr/bin:/bin'";
  if (lathe::gate::find_ncu((dir_ / "empty-bin").string() + ":/usr/bin:/bin")) {
    GTEST_SKIP() << "ncu is installed in a fixed location here";
  }
  auto r = run_lathe(ws() + " profile reduction_cuda expert", path);
  EXPECT_EQ(r.code, 3) << r.err;
  EXPECT_NE(r.err.find("Nsight Compute (ncu) not found"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("/usr/local/cuda/bin/ncu"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("cuda-nsight-compute-"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("Nothing was profiled or stored"), std::string::npos) << r.err;
  EXPECT_TRUE(r.out.empty()) << r.out;
  EXPECT_EQ(profiles_stored(), 0);

  // --json changes nothing about it: no JSON that could be mistaken for a profile.
  auto j = run_lathe(ws() + " profile reduction_cuda expert --json", path);
  EXPECT_EQ(j.code, 3);
  EXPECT_TRUE(j.out.empty()) << j.out;
}

TEST_F(profile_cli, an_ncu_that_is_not_there_is_reported) {
  auto r = run_lathe(ws() + " profile reduction_cuda expert --ncu /nonexistent/ncu");
  EXPECT_EQ(r.code, 3) << r.err;
  EXPECT_NE(r.err.find("no executable at /nonexistent/ncu"), std::string::npos) << r.err;
  EXPECT_EQ(profiles_stored(), 0);
}

TEST_F(profile_cli, bad_arguments_are_usage_errors) {
  // A CPU task: there is no device counter to read.
  auto cpu = run_lathe(ws() + " profile '" + LATHE_SOURCE_DIR + "/tests/integration/tasks/axpy' naive");
  EXPECT_EQ(cpu.code, 2) << cpu.err;
  EXPECT_NE(cpu.err.find("CUDA"), std::string::npos) << cpu.err;
  auto shape = run_lathe(ws() + " profile reduction_cuda expert --shape nope");
  EXPECT_EQ(shape.code, 2) << shape.err;
  EXPECT_NE(shape.err.find("main"), std::string::npos) << shape.err;  // names the sets it has
  auto kernel = run_lathe(ws() + " profile reduction_cuda no_such_kernel");
  EXPECT_EQ(kernel.code, 2) << kernel.err;
}
