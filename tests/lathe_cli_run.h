// The lathe binary run as a user runs it, for the CLI tests: exit code, stdout, stderr. `cwd`
// empty: the test's own working directory.
#pragma once

#include <gtest/gtest.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>
#include <system_error>

namespace lathe::testing {

struct run_result {
  int code = -1;
  std::string out, err;
};

// `cmd` through the shell with its stderr into the file `err`, read back and removed: a caller
// running several commands at once gives each its own file.
inline run_result run_shell(const std::string& cmd, const std::filesystem::path& err) {
  run_result r;
  FILE* p = popen((cmd + " 2>'" + err.string() + "'").c_str(), "r");
  char buf[4096];
  for (size_t n; (n = fread(buf, 1, sizeof buf, p)) > 0;) r.out.append(buf, n);
  const int st = pclose(p);
  r.code = WIFEXITED(st) ? WEXITSTATUS(st) : -1;
  std::ifstream e(err);
  r.err.assign(std::istreambuf_iterator<char>(e), {});
  std::filesystem::remove(err);
  return r;
}

inline run_result run_lathe(const std::string& args, const std::filesystem::path& cwd = {}) {
  namespace fs = std::filesystem;
  const fs::path err = fs::temp_directory_path() / ("lathe-cli-err-" + std::to_string(getpid()));
  const std::string cd = cwd.empty() ? std::string() : "cd '" + cwd.string() + "' && ";
  return run_shell(cd + "'" + LATHE_BINARY_DIR + "/lathe' " + args, err);
}

// A CLI test's own folder: /tmp/lathe-<suite>-XXXXXX made before each test and removed after it,
// with the gate's lock folder inside (LATHE_LOCK_DIR: device and CPU-slot locks of this test
// alone, so that tests in parallel never wait on each other's), and `ws()`, the --workspace
// argument of the workspace at dir_/ws (`ws(name)`: at dir_/name). A fixture that needs more (a lathe.toml, a folder) adds
// it in its own SetUp after this one's.
class cli_folder_test : public ::testing::Test {
 protected:
  void SetUp() override {
    const std::string suite = ::testing::UnitTest::GetInstance()->current_test_suite()->name();
    std::string tmpl = (std::filesystem::temp_directory_path() / ("lathe-" + suite + "-XXXXXX")).string();
    ASSERT_NE(mkdtemp(tmpl.data()), nullptr) << tmpl;
    dir_ = tmpl;
    setenv("LATHE_LOCK_DIR", (dir_ / "locks").c_str(), 1);
  }
  void TearDown() override {
    std::error_code ec;
    std::filesystem::remove_all(dir_, ec);
  }
  std::string ws(const std::string& name = "ws") const { return "--workspace '" + (dir_ / name).string() + "' "; }
  std::filesystem::path dir_;
};

}  // namespace lathe::testing
