// The trusted side of a worker: spawn, one request at a time, and the classification of every way
// a request can end. Nothing a worker does may kill, hang or fool lathe: every wait has a
// deadline, every read is non-blocking, and the verdict on a death comes from the kernel
// (wait4 status, /proc), never from the worker's word alone.
#include <cstdint>
#include "gate/cpu/worker.h"

#include <dirent.h>
#include <fcntl.h>
#include <poll.h>
#include <pwd.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cmath>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <thread>
#include <utility>
#include <vector>

#include "gate/cpu/fd.h"
#include "gate/cpu/sandbox.h"
#include "gate/cpu/worker_end.h"

namespace lathe::gate {

namespace {

using namespace detail;
using clock_type = std::chrono::steady_clock;

// /proc/self/fd/6, which the worker dlopens, re-opens the object with a permission check against
// the worker's user: a build-cache file private to lathe's user would be refused to `nobody`.
// Such an object is handed over as a sealed in-memory copy instead (the worker cannot make the
// copy itself: RLIMIT_FSIZE 0 covers memfds too). Returns object_fd itself when no copy is needed.
result<int> object_for(int object_fd, bool dropping) {
  struct stat st {};
  if (fstat(object_fd, &st) != 0)
    return fail(errc::io_error, "the kernel object fd: " + errno_text(errno));
  if (!dropping || (st.st_mode & S_IROTH)) return object_fd;
#ifndef MFD_EXEC
#define MFD_EXEC 0x0010U  // Linux 6.3: executable memfd, explicit where vm.memfd_noexec asks
#endif
  int mem = memfd_create("lathe-kernel", MFD_CLOEXEC | MFD_ALLOW_SEALING | MFD_EXEC);
  if (mem < 0 && errno == EINVAL)
    mem = memfd_create("lathe-kernel", MFD_CLOEXEC | MFD_ALLOW_SEALING);
  if (mem < 0) return fail(errc::io_error, "memfd for the kernel object: " + errno_text(errno));
  unique_fd owner(mem);
  char buf[1 << 16];
  for (off_t at = 0;;) {
    ssize_t n = pread(object_fd, buf, sizeof buf, at);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return fail(errc::io_error, "reading the kernel object: " + errno_text(errno));
    if (n == 0) break;
    if (!write_all(mem, buf, static_cast<size_t>(n)))
      return fail(errc::io_error, "copying the kernel object: " + errno_text(errno));
    at += n;
  }
  // Sealed: the worker gets it read-only in spirit and in fact.
  if (fcntl(mem, F_ADD_SEALS, F_SEAL_WRITE | F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_SEAL) != 0)
    return fail(errc::io_error, "sealing the kernel object copy: " + errno_text(errno));
  return owner.release();
}

// The worker's command line and environment, as the exec in the child reads them (owned here).
struct exec_args {
  exec_args(const sandbox_options& opt, const std::string& exe)
      : env(sandbox::worker_environment(opt.env_allow, opt.threads)), args{exe} {
    args.insert(args.end(), opt.worker_args.begin(), opt.worker_args.end());
    args.push_back(opt.seccomp ? sandbox::seccomp_on_arg : sandbox::seccomp_off_arg);
    for (std::string& s : env) envp.push_back(s.data());
    envp.push_back(nullptr);
    for (std::string& a : args) argv.push_back(a.data());
    argv.push_back(nullptr);
  }
  exec_args(const exec_args&) = delete;  // argv and envp point into env and args
  std::vector<std::string> env, args;
  std::vector<char*> envp, argv;
};

// The user the worker runs as when lathe drops privileges: a uid of its own, or `opt.user`
// (never root).
result<void> plan_user(const sandbox_options& opt, sandbox::child_plan& plan) {
  if (plan.drop && opt.user.empty()) {
    plan.own_uid = true;
    plan.uid = sandbox::own_uid_base;
    plan.nproc = sandbox::nproc_limit(opt.threads);
  } else if (plan.drop) {
    passwd pw{}, *found = nullptr;
    std::vector<char> buf(16384);
    if (getpwnam_r(opt.user.c_str(), &pw, buf.data(), buf.size(), &found) != 0 || !found)
      return fail(errc::not_found, "worker: user '" + opt.user + "' does not exist");
    if (pw.pw_uid == 0)
      return fail(errc::invalid_argument, "worker: user '" + opt.user + "' is root");
    plan.uid = pw.pw_uid;
    plan.gid = pw.pw_gid;
    plan.nproc = sandbox::nproc_limit(opt.threads);
  }
  return {};
}

// A CPU slot's cores (sandbox_options::cores) as the child's affinity, set before exec.
result<void> plan_cores(const sandbox_options& opt, sandbox::child_plan& plan) {
  for (uint32_t c : opt.cores) {
    if (c >= CPU_SETSIZE) return fail(errc::invalid_argument, "worker: core " + std::to_string(c) + " out of range");
    CPU_SET(c, &plan.cores);
    plan.pin = true;
  }
  return {};
}

// Why the worker never reached exec (sandbox::await_exec), with what to do when a dropped
// worker's user may not read or run lathe-worker.
std::string start_failure_text(const std::string& exe, const sandbox::start_failure& f, bool dropped,
                               const sandbox_options& opt) {
  std::string msg = "could not start the worker '" + exe + "': " + f.what;
  if (dropped && f.error == EACCES)
    msg += " (it runs as " + (opt.user.empty() ? std::string("a user of its own") : "'" + opt.user + "'") +
           ": the binary and its directories must be readable and executable by any user)";
  return msg;
}

}  // namespace

// ---- worker -------------------------------------------------------------------------------

result<worker> worker::spawn(const sandbox_options& opt, const shared_region& region,
                             int object_fd) {
  // Once per process. SIGPIPE ignored: a worker that dies closes its pipes, and lathe's next
  // write must fail with EPIPE instead of killing lathe (pipes have no MSG_NOSIGNAL).
  // Not dumpable: when lathe is not root, the worker runs under lathe's uid, and
  // /proc/<lathe>/environ (API keys) and ptrace would otherwise be open to it. The cost is that
  // a debugger cannot attach to lathe without privileges and lathe leaves no core file.
  static std::once_flag once;
  std::call_once(once, [] {
    std::signal(SIGPIPE, SIG_IGN);
    prctl(PR_SET_DUMPABLE, 0, 0, 0, 0);
  });

  if (region.fd() < 0) return fail(errc::invalid_argument, "worker: no shared region");
  if (object_fd < 0 || fcntl(object_fd, F_GETFD) < 0)
    return fail(errc::invalid_argument, "worker: the kernel object fd is not open");
  const std::string exe = opt.worker_exe.string();
  if (exe.empty() || access(exe.c_str(), X_OK) != 0)
    return fail(errc::not_found, "lathe-worker not found or not executable at '" + exe + "'");

  sandbox::child_plan plan;
  plan.drop = opt.drop_privileges && geteuid() == 0;
  plan.parent = getpid();
  plan.open_files = opt.open_files;
  plan.private_proc = opt.private_proc;
  plan.own_namespaces = opt.own_namespaces;
  if (auto who = plan_user(opt, plan); !who) return tl::unexpected(who.error());
  auto rlim = [](double v) {
    return !(v > 0) || v >= 1e18 ? RLIM_INFINITY : static_cast<rlim_t>(std::ceil(v));
  };
  plan.address_space = opt.address_space_bytes ? opt.address_space_bytes : RLIM_INFINITY;
  plan.cpu_seconds = rlim(opt.cpu_seconds);
  if (auto pinned = plan_cores(opt, plan); !pinned) return tl::unexpected(pinned.error());

  exec_args ea(opt, exe);
  plan.exe = exe.c_str();
  unique_fd exe_fd(open(exe.c_str(), O_RDONLY | O_CLOEXEC));
  if (exe_fd.fd < 0) return fail(errc::io_error, "cannot open " + exe + ": " + errno_text(errno));
  plan.exe_fd = exe_fd.fd;
  plan.argv = ea.argv.data();
  plan.envp = ea.envp.data();

  int cmd[2], rep[2], err[2];
  if (pipe2(cmd, O_CLOEXEC) != 0) return fail(errc::io_error, "pipe: " + errno_text(errno));
  unique_fd cmd_r(cmd[0]), cmd_w(cmd[1]);
  if (pipe2(rep, O_CLOEXEC) != 0) return fail(errc::io_error, "pipe: " + errno_text(errno));
  unique_fd rep_r(rep[0]), rep_w(rep[1]);
  if (pipe2(err, O_CLOEXEC) != 0) return fail(errc::io_error, "pipe: " + errno_text(errno));
  unique_fd err_r(err[0]), err_w(err[1]);
  unique_fd devnull(open("/dev/null", O_RDWR | O_CLOEXEC));
  if (devnull.fd < 0) return fail(errc::io_error, "/dev/null: " + errno_text(errno));
  plan.fds[0] = region.fd();
  plan.fds[1] = cmd_r.fd;
  plan.fds[2] = rep_w.fd;
  auto object = object_for(object_fd, plan.drop);
  if (!object) return tl::unexpected(object.error());
  unique_fd object_copy(*object == object_fd ? -1 : *object);
  plan.fds[3] = *object;
  plan.devnull = devnull.fd;
  plan.error_fd = err_w.fd;
  // The op record: its write end the worker's fd 9, its read end lathe's alone.
  unique_fd record_r, record_w;
  if (opt.ops.mode != torch_compute::allowed) {
    int rec[2];
    if (pipe2(rec, O_CLOEXEC) != 0) return fail(errc::io_error, "pipe: " + errno_text(errno));
    record_r.fd = rec[0];
    record_w.fd = rec[1];
    plan.record_fd = record_w.fd;
  }

  const pid_t pid = sandbox::fork_worker(plan);
  if (pid < 0) return fail(errc::io_error, "fork: " + errno_text(-pid));

  close_fd(cmd_r.fd);
  close_fd(rep_w.fd);
  close_fd(err_w.fd);
  close_fd(devnull.fd);
  close_fd(record_w.fd);
  if (auto failed = sandbox::await_exec(pid, err_r.fd))
    return fail(errc::io_error, start_failure_text(exe, *failed, plan.drop, opt));
  // Non-blocking on lathe's ends: a worker that stops reading or writes half a reply must never
  // block lathe; the waits below use poll with a deadline.
  fcntl(cmd_w.fd, F_SETFL, O_NONBLOCK);
  fcntl(rep_r.fd, F_SETFL, O_NONBLOCK);
  if (record_r.fd >= 0) {
    fcntl(record_r.fd, F_SETFL, O_NONBLOCK);
    fcntl(record_r.fd, F_SETPIPE_SZ, 1 << 20);  // best effort: the default is 64 KiB
  }

  worker w;
  w.pid_ = pid;
  w.cmd_fd_ = cmd_w.release();
  w.reply_fd_ = rep_r.release();
  w.record_fd_ = record_r.release();
  w.record_ = op_record(opt.ops);
  w.rss_limit_ = opt.rss_limit_bytes;
  w.address_space_ = opt.address_space_bytes;
  w.cpu_seconds_ = opt.cpu_seconds;
  return w;
}

worker::worker(worker&& o) noexcept
    : pid_(std::exchange(o.pid_, -1)),
      cmd_fd_(std::exchange(o.cmd_fd_, -1)),
      reply_fd_(std::exchange(o.reply_fd_, -1)),
      record_fd_(std::exchange(o.record_fd_, -1)),
      record_(std::move(o.record_)),
      dead_(std::exchange(o.dead_, false)),
      rss_limit_(o.rss_limit_),
      address_space_(o.address_space_),
      cpu_seconds_(o.cpu_seconds_),
      last_end_(std::move(o.last_end_)),
      frozen_(std::exchange(o.frozen_, false)),
      stopped_(std::exchange(o.stopped_, false)) {}

worker& worker::operator=(worker&& o) noexcept {
  worker old(std::move(o));  // takes o's process; ours is killed when `old` goes
  std::swap(pid_, old.pid_);
  std::swap(cmd_fd_, old.cmd_fd_);
  std::swap(reply_fd_, old.reply_fd_);
  std::swap(record_fd_, old.record_fd_);
  std::swap(record_, old.record_);
  std::swap(dead_, old.dead_);
  std::swap(rss_limit_, old.rss_limit_);
  std::swap(address_space_, old.address_space_);
  std::swap(cpu_seconds_, old.cpu_seconds_);
  std::swap(last_end_, old.last_end_);
  std::swap(frozen_, old.frozen_);
  std::swap(stopped_, old.stopped_);
  return *this;
}

void worker::stop_now() {
  if (!alive() || stopped_) return;
  kill(pid_, SIGSTOP);
  // Stopped when every thread has taken the signal: microseconds, or the next scheduler tick for
  // one spinning on another core. A worker that died instead is reaped by its next request.
  const auto until = clock_type::now() + std::chrono::seconds(1);
  while (clock_type::now() < until) {
    siginfo_t si{};
    if (waitid(P_PID, static_cast<id_t>(pid_), &si, WSTOPPED | WEXITED | WNOHANG | WNOWAIT) != 0) break;
    if (si.si_pid == pid_) break;
    std::this_thread::sleep_for(std::chrono::microseconds(20));
  }
  stopped_ = true;
}

void worker::freeze_between_requests() {
  frozen_ = true;
  stop_now();
}

void worker::thaw() {
  frozen_ = false;
  if (alive() && stopped_) kill(pid_, SIGCONT);
  stopped_ = false;
}

worker::~worker() {
  // No polite quit: the worker is hostile and may ignore it. SIGKILL cannot be caught.
  if (pid_ > 0 && !dead_) {
    kill(pid_, SIGKILL);
    while (waitpid(pid_, nullptr, 0) < 0 && errno == EINTR) {
    }
  }
  close_fd(cmd_fd_);
  close_fd(reply_fd_);
  close_fd(record_fd_);
}

void worker::drain_record(bool judged) {
  if (record_fd_ < 0) return;
  char buf[4096];
  // At most a full pipe's worth per call: a worker writing without pause must not keep lathe
  // here, away from its watchdog.
  for (int reads = 0; reads < 256; ++reads) {
    ssize_t n = read(record_fd_, buf, sizeof buf);
    if (n > 0) {
      record_.feed(std::string_view(buf, static_cast<size_t>(n)), judged);
      continue;
    }
    if (n < 0 && errno == EINTR) continue;
    return;  // empty (EAGAIN), or every write end closed: the worker is gone
  }
}

worker_result worker::load(double timeout_s) {
  wire::command c;
  c.kind = wire::op::load;
  return request(c, timeout_s);
}

worker_result worker::setup(const wire::command& setup_cmd, double timeout_s) {
  wire::command c = setup_cmd;
  c.magic = wire::magic;
  c.kind = wire::op::setup;
  return request(c, timeout_s);
}

worker_result worker::run(uint32_t first_slot, uint32_t rotate, uint64_t calls, double timeout_s) {
  wire::command c;
  c.kind = wire::op::run;
  c.first_slot = first_slot;
  c.rotate = rotate;
  c.calls = calls;
  return request(c, timeout_s);
}

worker_result worker::transfer(wire::op direction, uint32_t first_slot, uint32_t count,
                               double timeout_s) {
  wire::command c;
  c.kind = direction;
  c.first_slot = first_slot;
  c.rotate = count;
  return request(c, timeout_s);
}

}  // namespace lathe::gate
