// The sandbox with real hostile kernels (PROTOCOL.md, trust boundary): environment and secrets,
// privilege drop, seccomp, memory limits, threads left running.
#include <cstdint>
#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <set>
#include <string>
#include <thread>

#include "gate/cpu/sandbox.h"
#include "worker/worker_fixture.h"

namespace lathe::test {
namespace {

using gate::worker_end;
using wire::status;

layout vector_layout() {
  return make_layout({{2, 32, 1000}}, {{2, 32, 1000}}, {2.0}, 1);
}

gate::worker_result run_once(running& r, const layout& l, double timeout_s = 5) {
  gate::worker_result res = r.w.setup(l.cmd, 5);
  if (!res.ok()) return res;
  return r.w.run(0, 1, 1, timeout_s);
}

TEST_F(worker_test, environment_is_rebuilt_and_secrets_stay_hidden) {
  setenv("OPENAI_API_KEY", "secret-test-value", 1);
  setenv("LATHE_TEST_ALLOWED", "yes", 1);
  gate::sandbox_options o = options();
  o.env_allow = {"LATHE_TEST_ALLOWED"};
  o.seccomp = false;  // let the kernel really try to read /proc/<lathe>/environ
  layout l = make_layout({}, {{1, 8, 16384}}, {}, 1);
  running r = start("env_spy", o, l.region_bytes());
  gate::worker_result res = run_once(r, l);
  ASSERT_TRUE(res.ok()) << gate::to_string(res.end) << " " << res.detail;

  const uint8_t* out = r.region.data() + l.offsets[0];
  const auto* head = reinterpret_cast<const int64_t*>(out);
  EXPECT_EQ(head[0], -1) << "OPENAI_API_KEY reached the worker's environment";
  const std::string all(reinterpret_cast<const char*>(out), 16384);
  EXPECT_EQ(all.find("secret-test-value"), std::string::npos)
      << "the worker read the secret (from /proc/" << getpid() << "/environ: " << head[1] << ")";
  EXPECT_LE(head[1], 0) << "the worker could read lathe's environ";
  // Not dumpable: the protection when lathe is not root and the worker runs under its uid.
  EXPECT_EQ(prctl(PR_GET_DUMPABLE), 0);

  if (geteuid() == 0) {
    // A user of its own: uid = gid = the base + the worker's pid (sandbox.h, own_uid).
    EXPECT_EQ(head[2], static_cast<int64_t>(sandbox::own_uid_base) + r.w.pid()) << "uid after the privilege drop";
    EXPECT_EQ(head[3], head[2]) << "gid after the privilege drop";
  } else {
    EXPECT_EQ(head[2], static_cast<int64_t>(getuid()));
  }
  EXPECT_EQ(head[5], 1) << "working directory is not /";
  EXPECT_EQ(head[6], 0x7f) << "open fds other than 0..6 (bit mask)";
  EXPECT_EQ(head[7], 0) << "RLIMIT_FSIZE";

  std::set<std::string> env;
  const char* p = reinterpret_cast<const char*>(out + 8192);
  for (int64_t at = 0; at < head[4];) {
    std::string kv(p + at);
    at += static_cast<int64_t>(kv.size()) + 1;
    env.insert(kv);
  }
  const std::set<std::string> expected = {"LATHE_TEST_ALLOWED=yes",    "PATH=/usr/bin:/bin",
                                          "HOME=/nonexistent",         "OMP_NUM_THREADS=2",
                                          "OPENBLAS_NUM_THREADS=2",    "OMP_WAIT_POLICY=PASSIVE",
                                          "OPENBLAS_THREAD_TIMEOUT=4", "GOMP_SPINCOUNT=0",
                                          std::string("GLIBC_TUNABLES=") + sandbox::malloc_tunables};
  EXPECT_EQ(env, expected);
  unsetenv("OPENAI_API_KEY");
}

// Each mode of kernels/escape.cpp is one way out; seccomp kills every one of them.
class escape_test : public worker_test, public ::testing::WithParamInterface<int> {};

TEST_P(escape_test, forbidden_system_call_kills_the_worker) {
  layout l = make_layout({{2, 32, 16}}, {{2, 32, 16}}, {static_cast<double>(GetParam())}, 1);
  running r = start("escape", options(), l.region_bytes());
  gate::worker_result res = run_once(r, l);
  EXPECT_EQ(res.end, worker_end::forbidden)
      << "mode " << GetParam() << ": " << gate::to_string(res.end) << " " << res.detail
      << " (kernel code " << res.reply.code << ")";
  EXPECT_NE(res.detail.find("SIGSYS"), std::string::npos);
}

// fork, exec, socket, kill(lathe), setrlimit, ftruncate(region), unlink, ptrace, open(rw),
// kill(0) (lathe's process group), F_SETOWN, sched_setaffinity and sched_setscheduler on lathe.
INSTANTIATE_TEST_SUITE_P(modes, escape_test,
                         ::testing::Values(0, 1, 2, 3, 4, 5, 6, 7, 8, 10, 12, 13, 14));

// A hangup sent to lathe's process group (a terminal closed under `nohup lathe …`) must not reach
// a worker: each leads a process group of its own, and still runs.
TEST_F(worker_test, a_worker_leads_its_own_process_group) {
  layout l = make_layout({{2, 32, 16}}, {{2, 32, 16}}, {3.0}, 1);
  running r = start("double", options(), l.region_bytes());
  EXPECT_EQ(getpgid(r.w.pid()), r.w.pid());
  EXPECT_NE(getpgid(r.w.pid()), getpgrp());
  gate::worker_result res = run_once(r, l);
  EXPECT_TRUE(res.ok()) << gate::to_string(res.end) << " " << res.detail;
}

TEST_F(worker_test, another_workers_memory_is_unreadable) {
  // The victim: a worker as the baseline's would be, same user, holding its region.
  layout l = vector_layout();
  running victim = start("double", options(), l.region_bytes());
  layout spy =
      make_layout({{2, 32, 16}}, {{2, 32, 16}}, {11.0, static_cast<double>(victim.w.pid())}, 1);
  running r = start("escape", options(), spy.region_bytes());
  gate::worker_result res = run_once(r, spy);
  EXPECT_EQ(res.end, worker_end::replied) << res.detail;
  EXPECT_EQ(res.reply.st, status::kernel_error) << "opened /proc/<victim>/mem";
  // Refused, or (as root: each worker a user of its own, with a /proc where no other user's
  // process shows) not even there.
  EXPECT_TRUE(res.reply.code == EACCES || res.reply.code == ENOENT) << res.reply.code;
}

TEST_F(worker_test, constructors_run_under_the_filter_too) {
  running r = start("constructor_fork", options(), 4096, false);
  EXPECT_EQ(load_result.end, worker_end::forbidden) << load_result.detail;
}

// Freezing a timing worker (worker.h freeze_between_requests) stops its thread group: every
// thread the filter lets a kernel create. A process it forked or cloned would be outside the group
// and would burn the CPU on while the worker is frozen and another is timed, and outlive it; the
// filter kills the worker at the attempt instead, before any child runs (kernels/fork_burner.cpp:
// its child would count in the output tensor, which lathe sees through the region).
uint64_t counted(const running& r, const layout& l) {
  return *reinterpret_cast<const volatile uint64_t*>(r.region.data() + l.offsets[0]);
}

class fork_test : public worker_test, public ::testing::WithParamInterface<int> {};

TEST_P(fork_test, a_kernel_that_starts_a_process_dies_before_it_runs) {
  layout l = make_layout({}, {{1, 64, 8}}, {static_cast<double>(GetParam())}, 1);
  running r = start("fork_burner", options(), l.region_bytes());
  gate::worker_result res = run_once(r, l);
  if (GetParam() == 2) {
    // clone3 carries its flags where the filter cannot read them: refused with ENOSYS (glibc
    // then falls back to clone, whose flags are read), so no process either.
    ASSERT_TRUE(res.end == worker_end::replied) << gate::to_string(res.end) << " " << res.detail;
    EXPECT_EQ(res.reply.st, status::kernel_error);
    EXPECT_EQ(res.reply.code, ENOSYS);
    r.w.freeze_between_requests();
  } else {
    EXPECT_EQ(res.end, worker_end::forbidden) << gate::to_string(res.end) << " " << res.detail;
    EXPECT_NE(res.detail.find("SIGSYS"), std::string::npos) << res.detail;
    EXPECT_FALSE(r.w.alive());
  }
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  EXPECT_EQ(counted(r, l), 0u) << "a child of the worker is running";
}

// fork(), clone() of a process sharing the worker's memory, clone3().
INSTANTIATE_TEST_SUITE_P(modes, fork_test, ::testing::Values(0, 1, 2));

// The same kernel without the filter: its child runs, and freezing the worker does not stop it.
// What the filter above prevents, and proof that the counter shows a child when there is one.
TEST_F(worker_test, without_the_filter_a_forked_child_runs_past_a_frozen_worker) {
  gate::sandbox_options o = options();
  o.seccomp = false;
  layout l = make_layout({}, {{1, 64, 8}}, {0.0}, 1);
  running r = start("fork_burner", o, l.region_bytes());
  gate::worker_result res = run_once(r, l);
  ASSERT_TRUE(res.ok()) << gate::to_string(res.end) << " " << res.detail;
  r.w.freeze_between_requests();
  const uint64_t before = counted(r, l);
  std::this_thread::sleep_for(std::chrono::milliseconds(200));
  EXPECT_GT(counted(r, l), before) << "the forked child did not run";
  // The child ends by itself after about 2 s: wait for it, so that it burns nothing after the test.
  uint64_t last = counted(r, l);
  for (int i = 0; i < 40; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    const uint64_t now = counted(r, l);
    if (now == last) break;
    last = now;
  }
}

TEST_F(worker_test, reading_a_limit_is_allowed_under_seccomp) {
  layout l = make_layout({{2, 32, 16}}, {{2, 32, 16}}, {9.0}, 1);
  running r = start("escape", options(), l.region_bytes());
  gate::worker_result res = run_once(r, l);
  EXPECT_TRUE(res.ok()) << gate::to_string(res.end) << " " << res.detail;
}

TEST_F(worker_test, sealed_region_cannot_be_shrunk_even_without_seccomp) {
  layout l = make_layout({{2, 32, 16}}, {{2, 32, 16}}, {5.0}, 1);
  gate::sandbox_options o = options();
  o.seccomp = false;
  running r = start("escape", o, l.region_bytes());
  gate::worker_result res = run_once(r, l);
  EXPECT_EQ(res.end, worker_end::replied);
  EXPECT_EQ(res.reply.st, status::kernel_error);
  EXPECT_EQ(res.reply.code, EPERM);
  volatile uint8_t last = r.region.data()[r.region.size() - 1];  // no SIGBUS here
  (void)last;
}

TEST_F(worker_test, writing_a_file_is_forbidden_and_leaves_nothing) {
  const std::string path = open_dir() + "/escaped.txt";
  layout l = make_layout({{1, 8, 256}}, {{2, 32, 16}}, {}, 1);
  for (bool seccomp : {true, false}) {
    std::filesystem::remove(path);
    gate::sandbox_options o = options();
    o.seccomp = seccomp;
    running r = start("write_file", o, l.region_bytes());
    std::memcpy(r.region.data() + l.offsets[0], path.c_str(), path.size() + 1);
    gate::worker_result res = run_once(r, l);
    if (seccomp) {
      EXPECT_EQ(res.end, worker_end::forbidden) << res.detail;
      EXPECT_FALSE(std::filesystem::exists(path));
    } else {
      // Without the filter, RLIMIT_FSIZE 0 still stops the first byte.
      EXPECT_EQ(res.end, worker_end::crashed) << res.detail;
      EXPECT_EQ(res.signal, SIGXFSZ);
      EXPECT_TRUE(!std::filesystem::exists(path) || std::filesystem::file_size(path) == 0);
    }
  }
}

gate::sandbox_options small_memory(gate::sandbox_options o) {
  o.address_space_bytes = uint64_t{1} << 30;
  o.rss_limit_bytes = uint64_t{256} << 20;
  return o;
}

TEST_F(worker_test, malloc_until_null_then_write_is_memory_limit) {
  layout l = vector_layout();
  running r = start("malloc_null", small_memory(options()), l.region_bytes());
  gate::worker_result res = run_once(r, l);
  EXPECT_EQ(res.end, worker_end::memory_limit) << gate::to_string(res.end) << " " << res.detail;
}

TEST_F(worker_test, touching_memory_trips_the_resident_watchdog) {
  layout l = vector_layout();
  running r = start("touch_memory", small_memory(options()), l.region_bytes());
  gate::worker_result res = run_once(r, l);
  EXPECT_EQ(res.end, worker_end::memory_limit) << gate::to_string(res.end) << " " << res.detail;
  EXPECT_NE(res.detail.find("watchdog"), std::string::npos) << res.detail;
  EXPECT_GE(res.max_rss_bytes, uint64_t{200} << 20);
}

TEST_F(worker_test, touching_memory_up_to_the_address_space_limit_is_memory_limit) {
  layout l = vector_layout();
  gate::sandbox_options o = small_memory(options());
  o.address_space_bytes = uint64_t{512} << 20;
  o.rss_limit_bytes = 0;  // no watchdog: RLIMIT_AS stops it
  running r = start("touch_memory", o, l.region_bytes());
  gate::worker_result res = run_once(r, l);
  EXPECT_EQ(res.end, worker_end::memory_limit) << gate::to_string(res.end) << " " << res.detail;
}

TEST_F(worker_test, uncaught_bad_alloc_is_memory_limit) {
  layout l = vector_layout();
  running r = start("new_until_bad_alloc", small_memory(options()), l.region_bytes());
  gate::worker_result res = run_once(r, l);
  EXPECT_EQ(res.end, worker_end::memory_limit) << gate::to_string(res.end) << " " << res.detail;
  EXPECT_EQ(res.reply.st, status::kernel_error);
  EXPECT_NE(std::string(res.reply.message).find("bad_alloc"), std::string::npos);
  EXPECT_FALSE(r.w.alive());
}

TEST_F(worker_test, spinning_background_thread_shows_in_idle_cpu) {
  layout l = vector_layout();
  running r = start("spin_thread", options(), l.region_bytes());
  ASSERT_TRUE(run_once(r, l).ok());
  EXPECT_GE(r.w.thread_count(), 2);
  // The best of three windows: on a loaded 2-core machine one window may see the spinner
  // descheduled; an honest kernel shows ~0 in every window (honest_kernels_leave_the_cpu_idle).
  const double window = 0.4;
  double best = 0;
  for (int i = 0; i < 3 && best < 0.5 * window; ++i)
    best = std::max(best, r.w.idle_cpu_seconds(window));
  EXPECT_GE(best, 0.5 * window);
}

// Issue 42 (load never decides a verdict): under a load of 9 on two cores a spinning thread got
// 22 % of a core and passed the gate's 30 % idle check (hostile background_thread read `ok`).
// Counted as time running or waiting to run it shows its whole window, here beside burners that
// keep every core busy four times over.
TEST_F(worker_test, a_spinning_thread_wants_its_whole_window_on_a_loaded_machine) {
  layout l = vector_layout();
  running r = start("spin_thread", options(), l.region_bytes());
  ASSERT_TRUE(run_once(r, l).ok());
  if (r.w.idle_demand_seconds(0.01) < 0) GTEST_SKIP() << "this kernel keeps no schedstat";
  const double window = 0.3;
  double wanted = 0, used = 0;
  {
    cpu_burners load(4);
    wanted = r.w.idle_demand_seconds(window);
    used = r.w.idle_cpu_seconds(window);
  }
  EXPECT_GE(wanted, 0.8 * window) << "CPU time in the next window: " << used << " s";
}

// The other side of the same check: threads thawed behind a hog wait for a core before they go
// back to sleep, and an honest OpenMP team "wanted" 61 % of a core over the first 50 ms after
// its thaw beside one (the redteam's one_evaluation_cannot_starve_another, reverted 861a97e).
// The gate's verdict is the next 250 ms (evaluator::idle_check): by then the team sleeps.
TEST_F(worker_test, an_honest_team_thawed_beside_burners_is_asleep_in_the_confirming_window) {
  layout l = vector_layout();
  running r = start("openmp", options(), l.region_bytes());
  ASSERT_TRUE(r.w.setup(l.cmd, 5).ok());
  if (r.w.idle_demand_seconds(0.01) < 0) GTEST_SKIP() << "this kernel keeps no schedstat";
  r.w.freeze_between_requests();
  double first = 0, confirm = 0;
  cpu_burners load(4);
  for (int round = 0; round < 3; ++round) {
    gate::worker_result res = r.w.run(0, 1, 20, 10);
    if (!res.ok()) {
      ADD_FAILURE() << gate::to_string(res.end) << " " << res.detail;
      break;
    }
    r.w.thaw();
    first = std::max(first, r.w.idle_demand_seconds(0.05));
    confirm = std::max(confirm, r.w.idle_demand_seconds(0.25));
  }
  RecordProperty("most_wanted_in_the_first_50_ms", std::to_string(first));
  EXPECT_LT(confirm, 0.3 * 0.25) << "most wanted over the first 50 ms: " << first << " s";
}

TEST_F(worker_test, honest_kernels_leave_the_cpu_idle) {
  layout l = vector_layout();
  for (const char* kernel : {"double", "openmp"}) {
    running r = start(kernel, options(), l.region_bytes());
    gate::worker_result res = r.w.setup(l.cmd, 5);
    ASSERT_TRUE(res.ok()) << kernel << ": " << res.detail;
    res = r.w.run(0, 1, 20, 5);
    ASSERT_TRUE(res.ok()) << kernel << ": " << gate::to_string(res.end) << " " << res.detail;
    EXPECT_LT(r.w.idle_cpu_seconds(0.3), 0.05) << kernel;
    EXPECT_LT(r.w.idle_demand_seconds(0.3), 0.05) << kernel;
    if (std::string(kernel) == "openmp")
      EXPECT_EQ(r.w.thread_count(), 2);  // main + one
    else
      EXPECT_EQ(r.w.thread_count(), 1);
  }
}

TEST_F(worker_test, object_unreadable_by_the_worker_user_still_loads) {
  // Build caches may be private to lathe's user; the worker reads the inherited fd instead.
  const std::string copy = open_dir() + "/private.so";
  std::filesystem::copy_file(kernel("double"), copy,
                             std::filesystem::copy_options::overwrite_existing);
  chmod(copy.c_str(), 0600);
  auto region = gate::shared_region::create(4096);
  ASSERT_TRUE(region);
  int fd = open(copy.c_str(), O_RDONLY | O_CLOEXEC);
  ASSERT_GE(fd, 0);
  auto w = gate::worker::spawn(options(), *region, fd);
  close(fd);
  ASSERT_TRUE(w) << w.error().message;
  gate::worker_result res = w->load(5);
  EXPECT_TRUE(res.ok()) << gate::to_string(res.end) << " " << res.detail;
}

TEST_F(worker_test, under_a_profiler_files_descriptors_and_its_environment_reach_the_worker) {
  // What `lathe profile-run` allows so that Nsight Compute's library works in its worker
  // (sandbox.h, profiler_allowances): file writes, descriptors the profiler handed down, the
  // profiler's values of names the sandbox sets itself. Everything else stays as it was.
  struct reset {
    ~reset() { sandbox::allow_for_profiler({}); }
  } restore;
  sandbox::profiler_allowances a;
  a.file_size = RLIM_INFINITY;
  a.keep_stdout_stderr = true;
  a.keep_inherited_fds = true;
  a.exec_through_libc = true;
  a.inherited_env_wins = true;
  sandbox::allow_for_profiler(a);
  const char* home = std::getenv("HOME");
  const std::string saved_home = home ? home : "";
  setenv("HOME", "/profiler-home", 1);
  setenv("NV_TEST_PROFILER", "token", 1);
  int p[2];
  ASSERT_EQ(pipe(p), 0);
  ASSERT_EQ(dup2(p[0], 40), 40);                   // no close-on-exec: what a profiler hands down
  int cloexec = fcntl(p[1], F_DUPFD_CLOEXEC, 41);  // lathe's own: closed at exec
  ASSERT_GE(cloexec, 41);

  gate::sandbox_options o = options();
  o.env_allow = {"HOME", "NV_TEST_PROFILER"};
  o.seccomp = false;
  layout l = make_layout({}, {{1, 8, 16384}}, {}, 1);
  running r = start("env_spy", o, l.region_bytes());
  gate::worker_result res = run_once(r, l);
  close(40);
  close(cloexec);
  close(p[0]);
  close(p[1]);
  if (home)
    setenv("HOME", saved_home.c_str(), 1);
  else
    unsetenv("HOME");
  unsetenv("NV_TEST_PROFILER");
  ASSERT_TRUE(res.ok()) << gate::to_string(res.end) << " " << res.detail;

  const uint8_t* out = r.region.data() + l.offsets[0];
  const auto* head = reinterpret_cast<const int64_t*>(out);
  if (geteuid() == 0) {
    EXPECT_EQ(head[2], static_cast<int64_t>(sandbox::own_uid_base) + r.w.pid()) << "the privilege drop stays";
  }
  EXPECT_EQ(static_cast<uint64_t>(head[7]), static_cast<uint64_t>(RLIM_INFINITY)) << "RLIMIT_FSIZE";
  const auto mask = static_cast<uint64_t>(head[6]);
  EXPECT_EQ(mask & 0x7f, 0x7fu) << "0..6 as always";
  EXPECT_TRUE(mask & (uint64_t{1} << 40)) << "the inherited descriptor";
  EXPECT_FALSE(mask & (uint64_t{1} << cloexec)) << "a close-on-exec descriptor leaked";
  std::set<std::string> env;
  const char* e = reinterpret_cast<const char*>(out + 8192);
  for (int64_t at = 0; at < head[4];) {
    std::string kv(e + at);
    at += static_cast<int64_t>(kv.size()) + 1;
    env.insert(kv);
  }
  EXPECT_TRUE(env.count("HOME=/profiler-home"));
  EXPECT_FALSE(env.count("HOME=/nonexistent"));
  EXPECT_TRUE(env.count("NV_TEST_PROFILER=token"));
  EXPECT_TRUE(env.count("PATH=/usr/bin:/bin"));  // not allowed: the sandbox's own
  EXPECT_TRUE(env.count("OMP_NUM_THREADS=2"));
}

// The worker's own network, IPC and UTS namespaces (issue 42: one sandbox for everything a
// candidate controls): without the seccomp filter, which kills any socket call, a kernel still
// cannot reach a listener on the host's loopback; with own_namespaces off it does, which shows
// that the listener and the kernel work.
struct loopback_listener {
  int fd = -1;
  uint16_t port = 0;
  loopback_listener() {
    fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t n = sizeof a;
    if (fd < 0 || bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0 || listen(fd, 4) != 0 ||
        getsockname(fd, reinterpret_cast<sockaddr*>(&a), &n) != 0)
      return;
    port = ntohs(a.sin_port);
  }
  ~loopback_listener() { if (fd >= 0) close(fd); }
  bool reached() const {  // a connection came within 200 ms
    pollfd p{fd, POLLIN, 0};
    return poll(&p, 1, 200) == 1;
  }
};

TEST_F(worker_test, a_worker_without_its_filter_still_reaches_no_network) {
  if (geteuid() != 0) GTEST_SKIP() << "namespaces of its own come with the privilege drop (root)";
  auto loopback_attempt = [](bool own_namespaces, std::string& net_ns) -> int64_t {
    loopback_listener l;
    EXPECT_NE(l.port, 0) << "no listener on 127.0.0.1";
    setenv("LATHE_TEST_PORT", std::to_string(l.port).c_str(), 1);
    gate::sandbox_options o = options();
    o.env_allow = {"LATHE_TEST_PORT"};
    o.seccomp = false;
    o.own_namespaces = own_namespaces;
    layout lay = make_layout({}, {{1, 8, 64}}, {}, 1);
    running r = start("loopback_send", o, lay.region_bytes());
    std::error_code ec;
    net_ns = std::filesystem::read_symlink("/proc/" + std::to_string(r.w.pid()) + "/ns/net", ec).string();
    gate::worker_result res = run_once(r, lay);
    EXPECT_TRUE(res.ok()) << gate::to_string(res.end) << " " << res.detail;
    const int64_t sent = *reinterpret_cast<const int64_t*>(r.region.data() + lay.offsets[0]);
    EXPECT_EQ(l.reached(), sent == 0) << "the listener's view and the kernel's disagree";
    return sent;
  };
  const std::string ours = std::filesystem::read_symlink("/proc/self/ns/net").string();
  std::string theirs;
  const int64_t isolated = loopback_attempt(true, theirs);
  EXPECT_NE(isolated, 0) << "the kernel sent a line to the host's loopback";
  EXPECT_NE(theirs, ours) << "the worker shares lathe's network namespace";
  const int64_t shared = loopback_attempt(false, theirs);
  EXPECT_EQ(shared, 0) << "control: with the host's network the line should arrive (" << shared << ")";
  EXPECT_EQ(theirs, ours);
}

}  // namespace
}  // namespace lathe::test
