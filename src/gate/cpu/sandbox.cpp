#include <cstdint>
#include "gate/cpu/sandbox.h"

#include <fcntl.h>
#include <sched.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <condition_variable>
#include <csignal>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <thread>

namespace lathe::sandbox {

namespace {

enum stage : int32_t {
  st_signals = 1,
  st_fds,
  st_close,
  st_rlimit,
  st_setgroups,
  st_setgid,
  st_setuid,
  st_verify,
  st_no_new_privs,
  st_chdir,
  st_exec,
  st_parent,
  st_affinity,
};

// Written before any fork (allow_for_profiler), read in the forked child: plain data.
profiler_allowances profiler;

[[noreturn]] void die(int fd, int32_t stage) {
  child_failure f{stage, errno};
  // Best effort: the parent sees EOF and a 127 exit if this write fails too.
  [[maybe_unused]] ssize_t n = write(fd, &f, sizeof f);
  _exit(127);
}

bool limit(int resource, rlim_t soft, rlim_t hard) {
  rlimit r{soft, hard};
  return setrlimit(resource, &r) == 0;
}

}  // namespace

const char* stage_name(int32_t stage) {
  switch (stage) {
    case st_signals:
      return "resetting signals";
    case st_fds:
      return "arranging file descriptors";
    case st_close:
      return "closing inherited file descriptors";
    case st_rlimit:
      return "setting resource limits";
    case st_setgroups:
      return "dropping supplementary groups";
    case st_setgid:
      return "switching group";
    case st_setuid:
      return "switching user";
    case st_verify:
      return "verifying the privilege drop";
    case st_no_new_privs:
      return "setting no_new_privs";
    case st_chdir:
      return "changing directory to /";
    case st_exec:
      return "executing the worker";
    case st_parent:
      return "binding the worker to lathe (PR_SET_PDEATHSIG)";
    case st_affinity:
      return "pinning the worker to its CPU slot's cores";
  }
  return "unknown stage";
}

// Long: the child's steps between fork and exec, in the order they must happen, each reporting
// its stage through the error pipe; one straight sequence of async-signal-safe calls reads as
// the order it is, and nothing here may allocate.
void exec_child(const child_plan& p) {
  int err = p.error_fd;

  // lathe ignores SIGPIPE and its threads may block signals; ignored dispositions and the mask
  // survive exec, and the worker should die of its own signals like any program.
  sigset_t none;
  sigemptyset(&none);
  if (sigprocmask(SIG_SETMASK, &none, nullptr) != 0) die(err, st_signals);
  for (int s = 1; s < NSIG; ++s) {
    if (s == SIGKILL || s == SIGSTOP) continue;
    struct sigaction sa = {};
    sa.sa_handler = SIG_DFL;
    sigaction(s, &sa, nullptr);  // fails harmlessly for the signals glibc reserves
  }
  // A process group of its own: a hangup or ^C sent to lathe's group (its terminal closed, a job
  // ended, `nohup lathe …` whose shell exits) must not kill a worker that lathe still times; it
  // dies with lathe (PR_SET_PDEATHSIG, below) and by lathe's hand. Found when such a SIGHUP
  // killed a baseline in its A/A control under `nohup lathe tune` (2026-12-06).
  if (setpgid(0, 0) != 0) die(err, st_signals);

  // Copy every source above the targets first: a source may sit on a target number (lathe's
  // fd 4 may be the reply pipe that must become 5), and dup2 onto it would lose it.
  // Under a profiler, stdout and stderr stay lathe's (where ncu reads them); a closed one is
  // /dev/null as usual.
  const bool keep_out = profiler.keep_stdout_stderr && fcntl(1, F_GETFD) >= 0;
  const bool keep_err = profiler.keep_stdout_stderr && fcntl(2, F_GETFD) >= 0;
  int high[9];
  const int src[9] = {p.devnull,
                      p.fds[0],
                      p.fds[1],
                      p.fds[2],
                      p.fds[3],
                      p.error_fd,
                      p.exe_fd,
                      keep_out ? 1 : p.devnull,
                      keep_err ? 2 : p.devnull};
  for (int i = 0; i < 9; ++i) {
    if (i == 6 && p.exe_fd < 0) {
      high[i] = -1;
      continue;
    }
    high[i] = fcntl(src[i], F_DUPFD_CLOEXEC, 16);
    if (high[i] < 0) die(err, st_fds);
  }
  // The op record's write end too, before any dup2 below could land on its number.
  const int high_record = p.record_fd >= 0 ? fcntl(p.record_fd, F_DUPFD_CLOEXEC, 16) : -1;
  if (p.record_fd >= 0 && high_record < 0) die(high[5], st_fds);
  err = high[5];
  // dup2 clears close-on-exec on the target; fd 7 (the error pipe) keeps it so that a
  // successful exec closes it and lathe reads EOF.
  if (dup2(high[0], 0) < 0 || dup2(high[7], 1) < 0 || dup2(high[8], 2) < 0) die(err, st_fds);
  for (int i = 0; i < 4; ++i)
    if (dup2(high[1 + i], 3 + i) < 0) die(err, st_fds);
  if (dup3(high[5], 7, O_CLOEXEC) < 0) die(err, st_fds);
  err = 7;
  // The binary (close-on-exec) as fd 8, until exec.
  int exe_fd = -1;
  if (p.exe_fd >= 0) {
    if (dup3(high[6], 8, O_CLOEXEC) < 0) die(err, st_fds);
    exe_fd = 8;
  }
  // The op record's write end as fd 9 (wire.h record_fd), kept across exec.
  unsigned first_closed = 9;
  if (high_record >= 0) {
    if (dup2(high_record, 9) < 0) die(err, st_fds);
    first_closed = 10;
  }
  // Exactly 0..6 (7, 8 until exec; 9 with a record): nothing else lathe had open leaks into
  // hostile code. Under a profiler, what lathe inherited without close-on-exec (the profiler's
  // own channels) stays; lathe opens everything of its own close-on-exec, so exec closes those.
  if (!profiler.keep_inherited_fds && syscall(SYS_close_range, first_closed, ~0u, 0u) != 0) {
    if (errno != ENOSYS) die(err, st_close);
    long max = sysconf(_SC_OPEN_MAX);
    for (long fd = first_closed; fd < (max > 0 ? max : 65536); ++fd) close(static_cast<int>(fd));
  }

  // CPU time: SIGXCPU at the soft limit, SIGKILL one second later if it is caught.
  if (!limit(RLIMIT_CPU, p.cpu_seconds,
             p.cpu_seconds == RLIM_INFINITY ? RLIM_INFINITY : p.cpu_seconds + 1) ||
      !limit(RLIMIT_AS, p.address_space, p.address_space) ||  //
      !limit(RLIMIT_CORE, 0, 0) ||                            // no core files
      !limit(RLIMIT_NOFILE, p.open_files, p.open_files) ||
      // No bytes into any regular file (a profiler's library writes temporary files).
      !limit(RLIMIT_FSIZE, std::max(profiler.file_size, p.file_size), std::max(profiler.file_size, p.file_size)))
    die(err, st_rlimit);

  // Pinned while still lathe's user: the mask is inherited across exec and by every thread.
  if (p.pin && syscall(SYS_sched_setaffinity, 0, sizeof p.cores, &p.cores) != 0) die(err, st_affinity);

  if (p.drop) {
    // A /proc of its own, where other users' processes do not show. Best effort: a container
    // may refuse the mount namespace even to root, and the worker is still a user of its own.
    // Network, IPC and UTS with it where the kernel allows (a container may refuse them): the
    // mount namespace and /proc still come when they do not (worker::namespaces_isolated says).
    const long ns = CLONE_NEWNS | (p.own_namespaces ? CLONE_NEWNET | CLONE_NEWIPC | CLONE_NEWUTS : 0);
    if (p.private_proc && (syscall(SYS_unshare, ns) == 0 || syscall(SYS_unshare, CLONE_NEWNS) == 0)) {
      if (syscall(SYS_mount, "none", "/", nullptr, MS_REC | MS_PRIVATE, nullptr) == 0)
        syscall(SYS_mount, "proc", "/proc", "proc", MS_NOSUID | MS_NODEV | MS_NOEXEC, "hidepid=2");
    }
    const uid_t uid = p.own_uid ? p.uid + static_cast<uid_t>(syscall(SYS_getpid)) : p.uid;
    const gid_t gid = p.own_uid ? static_cast<gid_t>(uid) : p.gid;
    // RLIMIT_NPROC counts the processes of the real uid, so it is set for the worker's user, not
    // root.
    if (!limit(RLIMIT_NPROC, p.nproc, p.nproc)) die(err, st_rlimit);
    // Raw system calls: glibc's setuid() would try to synchronize threads that do not exist in
    // the forked child. Order matters: groups and gid while still root, uid last.
    if (p.own_dir && syscall(SYS_fchownat, AT_FDCWD, p.own_dir, uid, gid, 0) != 0) die(err, st_setuid);
    if (syscall(SYS_setgroups, 0, nullptr) != 0) die(err, st_setgroups);
    if (syscall(SYS_setresgid, gid, gid, gid) != 0) die(err, st_setgid);
    if (syscall(SYS_setresuid, uid, uid, uid) != 0) die(err, st_setuid);
    // Regaining root must be impossible now; a silent partial drop would be worse than failing.
    if (syscall(SYS_setresuid, 0, 0, 0) == 0 || getuid() != uid || geteuid() != uid ||
        getgid() != gid) {
      errno = EPERM;
      die(err, st_verify);
    }
  }
  if (!p.drop && p.own_uid) {
    const uid_t uid = p.uid + static_cast<uid_t>(syscall(SYS_getpid));
    char digits[16];
    int n = 0;
    for (uid_t v = uid; v > 0 || n == 0; v /= 10) digits[n++] = static_cast<char>('0' + v % 10);
    for (char* a : p.uid_args) {
      if (!a) continue;
      char* d = a + 8;
      for (int k = n - 1; k >= 0; --k) *d++ = digits[k];
      *d = '\0';
    }
    if (p.own_dir && syscall(SYS_fchownat, AT_FDCWD, p.own_dir, uid, uid, 0) != 0) die(err, st_setuid);
  }
  // After the change of user, which clears it. Should lathe have died before this line, the
  // worker was reparented and must not run at all.
  if (syscall(SYS_prctl, PR_SET_PDEATHSIG, SIGKILL, 0, 0, 0) != 0) die(err, st_parent);
  if (p.parent > 0 && syscall(SYS_getppid) != p.parent) {
    errno = ESRCH;
    die(err, st_parent);
  }
  // No setuid binary or file capability can raise the worker's privileges again; also the
  // precondition for an unprivileged seccomp filter.
  if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0) die(err, st_no_new_privs);
  if (chdir("/") != 0) die(err, st_chdir);

  // Under a profiler, through libc's execve: Nsight's tree launcher follows children by
  // interposing the exec family (putting its libraries back into the child's LD_PRELOAD), and a
  // raw system call would go around it. /proc/self/fd/8 is the opened binary, so `nobody` still
  // needs no search permission on its directories (glibc's fexecve does the same). Should that
  // fail (no /proc), the system call below still starts the worker.
  if (exe_fd >= 0 && profiler.exec_through_libc) execve("/proc/self/fd/8", p.argv, p.envp);
  if (exe_fd >= 0)
    syscall(SYS_execveat, exe_fd, "", p.argv, p.envp, AT_EMPTY_PATH);
  else
    execve(p.exe, p.argv, p.envp);
  die(err, st_exec);
}

namespace {

// One thread, started with the first worker and never ended, does every fork: a worker's
// PR_SET_PDEATHSIG is bound to the thread that forked it, and a thread of std::async ends as
// soon as it has started the worker. Forks are one at a time; each is about a millisecond.
class spawner {
 public:
  spawner() { std::thread([this] { serve(); }).detach(); }
  pid_t fork_for(const child_plan& plan) {
    std::lock_guard<std::mutex> one(caller_);
    std::unique_lock<std::mutex> l(m_);
    job_ = &plan;
    done_ = false;
    cv_.notify_all();
    cv_.wait(l, [&] { return done_; });
    job_ = nullptr;
    return result_;
  }

 private:
  void serve() {
    std::unique_lock<std::mutex> l(m_);
    for (;;) {
      cv_.wait(l, [&] { return job_ != nullptr && !done_; });
      const pid_t pid = fork();
      if (pid == 0) exec_child(*job_);
      result_ = pid < 0 ? -errno : pid;
      done_ = true;
      cv_.notify_all();
    }
  }
  std::mutex caller_, m_;
  std::condition_variable cv_;
  const child_plan* job_ = nullptr;
  bool done_ = false;
  pid_t result_ = 0;
};

}  // namespace

pid_t fork_worker(const child_plan& plan) {
  // Never destroyed: its thread must outlive every worker, that is, live as long as lathe.
  static spawner* const s = new spawner;
  return s->fork_for(plan);
}

std::optional<start_failure> await_exec(pid_t pid, int error_fd) {
  child_failure f;
  ssize_t n;
  do n = read(error_fd, &f, sizeof f);
  while (n < 0 && errno == EINTR);
  if (n == 0) return std::nullopt;  // exec closed the pipe
  int st;
  while (waitpid(pid, &st, 0) < 0 && errno == EINTR) {
  }
  if (n != static_cast<ssize_t>(sizeof f)) return start_failure{"no report from the child", 0};
  return start_failure{std::string(stage_name(f.stage)) + ": " + std::strerror(f.error), f.error};
}

std::vector<std::string> worker_environment(const std::vector<std::string>& allow,
                                            uint32_t threads) {
  if (threads == 0) threads = online_cpus();
  const std::string n = std::to_string(threads);
  // What the sandbox sets itself. PASSIVE / spin count 0 / thread timeout: pool threads sleep as
  // soon as a call ends instead of spinning, which would slow the baseline run alternately with
  // this worker (PROTOCOL.md: a background thread that slows the baseline).
  // The malloc thresholds fixed (glibc's dynamic ones moved with each process's history): a
  // freed block of up to 32 MiB stays in the process and the next call reuses it. With the
  // defaults a worker could fall into returning the top of its heap after every call (trim at
  // twice a threshold that the first free raised to the temporaries' size) and fault the same
  // memory in again: eager PyTorch took 6-8 ms a call in such a process, 0.8 ms in its twin of
  // the same evaluation (bench/results/python-heap-2026-12-06.md).
  std::vector<std::string> own = {
      "PATH=/usr/bin:/bin",        "HOME=/nonexistent",       "OMP_NUM_THREADS=" + n,
      "OPENBLAS_NUM_THREADS=" + n, "OMP_WAIT_POLICY=PASSIVE", "OPENBLAS_THREAD_TIMEOUT=4",
      "GOMP_SPINCOUNT=0",          std::string("GLIBC_TUNABLES=") + malloc_tunables,
  };
  auto has = [](const std::vector<std::string>& list, const std::string& name) {
    return std::any_of(list.begin(), list.end(), [&](const std::string& kv) {
      return kv.compare(0, name.size() + 1, name + "=") == 0;
    });
  };
  std::vector<std::string> env;
  for (const std::string& name : allow) {
    if (name.empty() || name.find('=') != std::string::npos || has(env, name)) continue;
    if (has(own, name) && !profiler.inherited_env_wins) continue;
    if (const char* v = std::getenv(name.c_str())) env.push_back(name + "=" + v);
  }
  for (const std::string& kv : own)
    if (!has(env, kv.substr(0, kv.find('=')))) env.push_back(kv);
  return env;
}

void allow_for_profiler(const profiler_allowances& a) {
  profiler = a;
}

const profiler_allowances& allowed_for_profiler() {
  return profiler;
}

uint32_t online_cpus() {
  cpu_set_t set;
  CPU_ZERO(&set);
  if (sched_getaffinity(0, sizeof set, &set) == 0) {
    int n = CPU_COUNT(&set);
    if (n > 0) return static_cast<uint32_t>(n);
  }
  long n = sysconf(_SC_NPROCESSORS_ONLN);
  return n > 0 ? static_cast<uint32_t>(n) : 1;
}

rlim_t nproc_limit(uint32_t threads) {
  if (threads == 0) threads = online_cpus();
  return std::max<rlim_t>(256, rlim_t{4} * threads + 64);
}

}  // namespace lathe::sandbox
