// The start of a process in the sandbox (gate/cpu/sandbox.h await_exec), the one wait both a
// worker and a problem's oracle use: exec reached, or the step before it that failed, named, with
// the child reaped. Real processes; nothing timed.
#include <gtest/gtest.h>

#include <fcntl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <optional>
#include <string>

#include "gate/cpu/sandbox.h"

namespace lathe::sandbox {
namespace {

struct started {
  pid_t pid = -1;
  std::optional<start_failure> failure;
};

// Forks `exe` with a plan of /dev/null descriptors and waits for its exec.
started start(const char* exe) {
  const int devnull = open("/dev/null", O_RDWR | O_CLOEXEC);
  int err[2];
  EXPECT_EQ(pipe2(err, O_CLOEXEC), 0);
  char arg0[] = "child";
  char* argv[] = {arg0, nullptr};
  char* envp[] = {nullptr};
  child_plan plan;
  plan.exe = exe;
  plan.argv = argv;
  plan.envp = envp;
  for (int& f : plan.fds) f = devnull;
  plan.devnull = devnull;
  plan.error_fd = err[1];
  plan.parent = getpid();
  started s;
  s.pid = fork_worker(plan);
  EXPECT_GT(s.pid, 0);
  close(err[1]);
  if (s.pid > 0) s.failure = await_exec(s.pid, err[0]);
  close(err[0]);
  close(devnull);
  return s;
}

TEST(sandbox_start, a_child_that_reaches_exec_is_started_and_left_to_its_caller) {
  const started s = start("/bin/true");
  EXPECT_FALSE(s.failure) << s.failure->what;
  int st = 0;
  ASSERT_EQ(waitpid(s.pid, &st, 0), s.pid) << "the started child was reaped by await_exec";
  EXPECT_TRUE(WIFEXITED(st) && WEXITSTATUS(st) == 0);
}

TEST(sandbox_start, a_child_that_fails_before_exec_names_the_step_and_is_reaped) {
  const started s = start("/nonexistent/lathe-no-such-program");
  ASSERT_TRUE(s.failure) << "a missing program was reported started";
  EXPECT_EQ(s.failure->error, ENOENT);
  EXPECT_NE(s.failure->what.find(std::string(": ") + std::strerror(ENOENT)), std::string::npos) << s.failure->what;
  int st = 0;
  errno = 0;
  EXPECT_EQ(waitpid(s.pid, &st, WNOHANG), -1) << "the failed child was left unreaped";
  EXPECT_EQ(errno, ECHILD);
}

}  // namespace
}  // namespace lathe::sandbox
