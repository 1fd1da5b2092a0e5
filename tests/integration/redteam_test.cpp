// The red team's kernels (issue 22): each one got past the gate before, with an unearned speedup,
// a forbidden library, a file it had no right to read or harm to another evaluation. Each file in
// tests/integration/hostile/ says in its header what it does, what it used to get, and what it
// must get now:
//   // expect: <outcome>[|<outcome>…] [no-speedup]   no-speedup: not decided faster than the baseline
//   // task: <axpy|mm|softmax|row_mean>                the task it is evaluated on (axpy by default)
//   // timed                                           its trick shows only while timed
//   // secret: yes                                     @SECRET@ is a root-only file it must not read
//   // within: <seconds>                               the evaluation ends within this wall time
// @SOURCE@ in a kernel is the source tree. Each is built and run for real.
#include <gtest/gtest.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstddef>
#include <fstream>
#include <random>
#include <sstream>
#include <thread>

#include "core/outcome.h"
#include "gate/cpu/wire.h"
#include "gate/paired.h"
#include "gate_fixture.h"
#include "redteam_kernel.h"

namespace fs = std::filesystem;
using namespace lathe;

namespace {

using lathe::testing::has_line;
using lathe::testing::header;
using lathe::testing::read_text;

fs::path task_dir(const std::string& name) {
  if (name == "softmax" || name == "row_mean") return lathe::testing::source_dir() / "tasks" / name;
  return lathe::testing::source_dir() / "tests/integration/tasks" / (name.empty() ? "axpy" : name);
}

class redteam : public lathe::testing::gate_env, public ::testing::WithParamInterface<std::string> {
 protected:
  // The kernel as the gate sees it: placeholders filled in, written under the test's directory.
  fs::path prepare(const std::string& name, std::string& secret) {
    const fs::path src = lathe::testing::source_dir() / "tests/integration/hostile" / (name + ".cpp");
    std::string text = read_text(src);
    auto fill = [&](const std::string& key, const std::string& value) {
      for (size_t p; (p = text.find(key)) != std::string::npos;) text.replace(p, key.size(), value);
    };
    fill("@SOURCE@", lathe::testing::source_dir().string());
    if (header(text, "secret") == "yes") {
      // Not valid C++: an #include of it fails with its first line quoted in the error.
      std::random_device rd;
      secret = "LATHE-SECRET-" + std::to_string(rd()) + std::to_string(rd());
      const fs::path file = dir_ / "secret" / "root-only.txt";
      fs::create_directories(file.parent_path());
      std::ofstream(file) << secret << " is here\n";
      chmod(file.c_str(), 0600);
      fill("@SECRET@", file.string());
    }
    const fs::path out = dir_ / "kernels" / (name + ".cpp");
    fs::create_directories(out.parent_path());
    std::ofstream(out, std::ios::binary) << text;
    return out;
  }
};

}  // namespace

TEST_P(redteam, gets_what_it_earned) {
  std::string secret;
  const fs::path file = prepare(GetParam(), secret);
  const std::string text = read_text(file);
  const lathe::testing::expectation want = lathe::testing::expected(text);
  ASSERT_FALSE(want.outcomes.front().empty()) << file;
  const std::vector<std::string>& outcomes = want.outcomes;
  const bool no_speedup = want.no_speedup;
  const bool timed = has_line(text, "// timed");
  // Each kernel in the instantiation that matches it (redteam_test alone, redteam_untimed_test in
  // parallel: tests/integration/CMakeLists.txt). exhaust_nproc is checked only, but takes every
  // thread its user may have: alone, so that no neighbour's workers are what it starves.
  const std::string suite = ::testing::UnitTest::GetInstance()->current_test_info()->test_suite_name();
  EXPECT_EQ(suite == "issue22/redteam", timed || GetParam() == "exhaust_nproc")
      << GetParam() << " is in the wrong instantiation (" << suite << "): its header says "
      << (timed ? "// timed" : "nothing timed");
  if (timed) cfg_.policy.aa_unstable = 1.0;  // the verdict on the kernel, not on the machine's noise
  // row_mean's timing workers map and touch 130 MiB each, twelve at once: on the loaded 2-core VM
  // that took more than the 3 s watchdog (`timeout` in the timing setup, whatever the kernel).
  if (header(text, "task") == "row_mean") cfg_.call_timeout_s = 30;
  task t = load(task_dir(header(text, "task")));
  evaluation e = eval(t, kernel(file), timed);
  const std::string got(to_string(e.result));
  // One line a kernel, for the before/after table of the closing note.
  std::printf("[redteam] %-18s %-16s %s", GetParam().c_str(), got.c_str(),
              e.paired ? ("x" + std::to_string(e.paired->ratio).substr(0, 5) + " [" +
                          std::to_string(e.paired->ci_low).substr(0, 5) + ", " +
                          std::to_string(e.paired->ci_high).substr(0, 5) + "]  ").c_str()
                       : "");
  std::printf("%s\n", e.message.substr(0, 110).c_str());
  EXPECT_NE(std::find(outcomes.begin(), outcomes.end(), got), outcomes.end())
      << GetParam() << ": got " << got << " (" << e.message << "), want " << header(text, "expect") << "\n"
      << e.diagnostics.substr(0, 2000);
  if (no_speedup && e.result == outcome::ok) {
    ASSERT_TRUE(e.paired && e.aa) << GetParam();
    const double epsilon = gate::decision_epsilon(*e.aa, 0.05);
    EXPECT_LE(e.paired->ci_low, 1 + epsilon)
        << GetParam() << ": decided faster than the baseline, " << e.paired->ratio << "x ["
        << e.paired->ci_low << ", " << e.paired->ci_high << "], bar " << 1 + epsilon;
  }
  if (const std::string within = header(text, "within"); !within.empty())
    EXPECT_LT(e.wall_seconds, std::stod(within)) << GetParam() << ": the evaluation took too long";
  if (!secret.empty()) {
    EXPECT_EQ(e.message.find(secret), std::string::npos) << e.message;
    EXPECT_EQ(e.diagnostics.find(secret), std::string::npos) << e.diagnostics.substr(0, 2000);
  }
}

// `issue22`: the kernels whose header says `// timed` (and exhaust_nproc), run alone with the
// timed tests; `issue22_untimed`: checks only, in parallel with the other untimed tests.
INSTANTIATE_TEST_SUITE_P(
    issue22, redteam,
    ::testing::Values("memo_content", "stale_by_output", "spin_when_written", "forge_reply",
                      "sabotage_baseline", "rdtsc_timed", "rdtsc_pasted", "dlopen_phdr",
                      "dlopen_hidden", "exhaust_nproc", "clone_burner", "memo_address",
                      "memo_fingerprint"),
    [](const auto& info) { return info.param; });
INSTANTIATE_TEST_SUITE_P(
    issue22_untimed, redteam,
    ::testing::Values("proc_visible", "include_macro", "include_digraph", "include_splice",
                      "incbin_paste", "include_secret", "include_dev_zero", "softmax_no_max",
                      "setsid_call", "pipe_resize", "pipe_hoard", "escape_message", "escape_compile"),
    [](const auto& info) { return info.param; });

// The forger's copy of the reply must be lathe's, or the test proves nothing.
TEST(redteam_forger, copies_the_real_reply_layout) {
  const std::string text = read_text(lathe::testing::source_dir() / "tests/integration/hostile/forge_reply.cpp");
  EXPECT_EQ(header(text, "reply-bytes"), std::to_string(sizeof(wire::reply)));
  EXPECT_EQ(offsetof(wire::reply, calls_done), 16u);
  EXPECT_EQ(wire::magic, 0x4c415448u);
}

using redteam_env = lathe::testing::gate_env;

// What pipe_hoard.cpp says it holds is bounded by the worker's descriptor limit.
TEST_F(redteam_env, pipes_hold_little) {
  std::string none;
  const fs::path file = lathe::testing::source_dir() / "tests/integration/hostile/pipe_hoard.cpp";
  const uint64_t limit = std::stoull(header(read_text(file), "pipe-limit"));
  evaluation e = eval(load(task_dir("axpy")), kernel(file), false);
  ASSERT_EQ(e.result, outcome::launch_error) << e.message;
  const size_t at = e.message.find("held ");
  ASSERT_NE(at, std::string::npos) << e.message;
  EXPECT_LE(std::stoull(e.message.substr(at + 5)), limit) << e.message;
}

// Escape sequences from a kernel never reach a terminal raw.
TEST_F(redteam_env, candidate_text_is_escaped) {
  const fs::path dir = lathe::testing::source_dir() / "tests/integration/hostile";
  for (const char* name : {"escape_message.cpp", "escape_compile.cpp"}) {
    evaluation e = eval(load(task_dir("axpy")), kernel(dir / name), false);
    for (const std::string* s : {&e.message, &e.diagnostics}) {
      EXPECT_EQ(s->find('\033'), std::string::npos) << name << ": " << *s;
      EXPECT_EQ(s->find('\r'), std::string::npos) << name << ": " << *s;
      EXPECT_EQ(s->find('\a'), std::string::npos) << name << ": " << *s;
    }
  }
}

// exhaust_nproc.cpp takes every thread its user may have; an honest OpenMP kernel evaluated at
// the same time, in another evaluation, must not notice.
TEST_F(redteam_env, one_evaluation_cannot_starve_another) {
  const fs::path dir = lathe::testing::source_dir() / "tests/integration/hostile";
  const task t = load(task_dir("axpy"));
  const kernel_bundle hog = kernel(dir / "exhaust_nproc.cpp");
  const kernel_bundle honest = kernel(dir / "neighbour_omp");
  ASSERT_EQ(eval(t, honest, false).result, outcome::ok);  // built and cached before the race
  evaluation first;
  std::thread other([&] { first = eval(t, hog, true); });
  // Each of the hog's workers holds its threads for 0.5 s from its load (lathe_init), one after
  // another while its evaluation starts them: wait until one does.
  auto hog_holds = [] {
    for (const auto& e : fs::directory_iterator("/proc")) {
      const std::string n = e.path().filename();
      if (n.empty() || n[0] < '0' || n[0] > '9') continue;
      if (read_text(e.path() / "cmdline").find("lathe-worker") == std::string::npos) continue;
      const std::string status = read_text(e.path() / "status");
      const size_t at = status.find("Threads:");
      if (at != std::string::npos && std::stol(status.substr(at + 8)) > 100) return true;
    }
    return false;
  };
  bool held = false;
  for (int i = 0; i < 400 && !held; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(25));
    held = hog_holds();
  }
  EXPECT_TRUE(held) << "the hog's worker never held its threads";
  evaluation second = eval(t, honest, true);  // timed: a dozen workers start
  other.join();
  // Not harmed: its checks pass and it is timed (two evaluations at once on two cores may well
  // leave the A/A control too noisy to decide: `unstable` is the machine's verdict, not a crash).
  EXPECT_TRUE(second.result == outcome::ok || second.result == outcome::unstable)
      << second.message << "\n" << second.diagnostics.substr(0, 1000);
  EXPECT_NE(first.result, outcome::crash) << first.message;
}

// A worker dies with lathe, whatever the kernel does: sleep_forever.cpp sleeps in its first call
// while lathe is killed with SIGKILL.
TEST_F(redteam_env, workers_die_with_lathe) {
  const fs::path lathe = fs::path(LATHE_BINARY_DIR) / "lathe";
  const fs::path file = lathe::testing::source_dir() / "tests/integration/hostile/sleep_forever.cpp";
  const pid_t pid = fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    const std::string ws = (dir_ / "ws").string();
    std::filesystem::create_directories(ws);
    if (chdir(ws.c_str()) != 0) _exit(126);
    int null = ::open("/dev/null", O_WRONLY);
    dup2(null, 1);
    dup2(null, 2);
    execl(lathe.c_str(), "lathe", "--workspace", ws.c_str(), "eval", task_dir("axpy").c_str(),
          file.c_str(), "--no-time", nullptr);
    _exit(127);
  }
  // The worker: a child of lathe running lathe-worker.
  auto children = [](pid_t parent) {
    std::vector<pid_t> out;
    for (const auto& e : fs::directory_iterator("/proc")) {
      const std::string n = e.path().filename();
      if (n.empty() || n[0] < '0' || n[0] > '9') continue;
      if (read_text(e.path() / "cmdline").find("lathe-worker") == std::string::npos) continue;
      std::ifstream in(e.path() / "stat");
      std::string line;
      if (!std::getline(in, line)) continue;
      const size_t close = line.rfind(')');
      if (close == std::string::npos) continue;
      std::istringstream rest(line.substr(close + 2));
      char state;
      pid_t ppid = 0;
      rest >> state >> ppid;
      if (ppid == parent) out.push_back(static_cast<pid_t>(std::stol(n)));
    }
    return out;
  };
  std::vector<pid_t> workers;
  for (int i = 0; i < 300 && workers.empty(); ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    workers = children(pid);
  }
  ASSERT_FALSE(workers.empty()) << "lathe started no worker within 30 s";
  std::this_thread::sleep_for(std::chrono::milliseconds(500));  // the kernel is asleep in its call
  kill(pid, SIGKILL);
  waitpid(pid, nullptr, 0);
  bool alive = true;
  for (int i = 0; i < 40 && alive; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
    alive = false;
    for (pid_t w : workers) {
      const fs::path proc = "/proc/" + std::to_string(w);
      std::ifstream in(proc / "stat");
      std::string line;
      // A zombie is dead; it waits for init to reap it.
      if (std::getline(in, line) && read_text(proc / "cmdline").find("lathe-worker") != std::string::npos &&
          line.substr(line.rfind(')') + 2, 1) != "Z")
        alive = true;
    }
  }
  for (pid_t w : workers) kill(w, SIGKILL);  // not to leave one behind when the test fails
  EXPECT_FALSE(alive) << "a worker outlived lathe by 2 s";
}

// Where the worker's files are not confined (no Landlock, or the sandbox off as here), the
// library that dlopen_hidden.cpp opens at run time is found in its mappings.
TEST_F(redteam_env, a_library_opened_at_run_time_is_found_in_the_mappings) {
  if (geteuid() != 0) GTEST_SKIP() << "the worker's mappings are readable to lathe only as root";
  cfg_.sandbox.seccomp = false;  // no filter, no Landlock: the mappings are the last line
  const fs::path file = lathe::testing::source_dir() / "tests/integration/hostile/dlopen_hidden.cpp";
  evaluation e = eval(load(task_dir("mm")), kernel(file), false);
  EXPECT_EQ(e.result, outcome::forbidden) << e.message;
  EXPECT_NE(e.message.find("openblas"), std::string::npos) << e.message;
}

// A worker that cannot start is lathe's trouble, not the kernel's: `infra_error`, tried twice.
TEST_F(redteam_env, a_worker_that_cannot_start_is_an_infra_error) {
  cfg_.sandbox.worker_exe = dir_ / "no-such-dir" / "lathe-worker";
  evaluation e = eval(load(task_dir("axpy")), kernel(task_dir("axpy") / "kernels/naive.cpp"), false);
  EXPECT_EQ(e.result, outcome::infra_error) << e.message;
  EXPECT_NE(e.message.find("could not start"), std::string::npos) << e.message;
  EXPECT_NE(e.diagnostics.find("infra_error, retried"), std::string::npos) << e.diagnostics;
}
