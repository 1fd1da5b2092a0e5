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

#include "gate/cpu/sandbox.h"
#include "gate/cpu/worker_end.h"

namespace lathe::gate {

namespace {

using namespace detail;
using clock_type = std::chrono::steady_clock;

void close_fd(int& fd) {
  if (fd >= 0) close(fd);
  fd = -1;
}

// Owns a descriptor during spawn, so that every early return closes what was opened.
struct unique_fd {
  int fd = -1;
  unique_fd() = default;
  explicit unique_fd(int f) : fd(f) {}
  unique_fd(const unique_fd&) = delete;
  unique_fd& operator=(const unique_fd&) = delete;
  ~unique_fd() { close_fd(fd); }
  int release() { return std::exchange(fd, -1); }
};

bool write_all(int fd, const void* data, size_t bytes) {
  auto* p = static_cast<const char*>(data);
  while (bytes > 0) {
    ssize_t n = write(fd, p, bytes);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    p += n;
    bytes -= static_cast<size_t>(n);
  }
  return true;
}

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
  auto rlim = [](double v) {
    return !(v > 0) || v >= 1e18 ? RLIM_INFINITY : static_cast<rlim_t>(std::ceil(v));
  };
  plan.address_space = opt.address_space_bytes ? opt.address_space_bytes : RLIM_INFINITY;
  plan.cpu_seconds = rlim(opt.cpu_seconds);

  std::vector<std::string> env = sandbox::worker_environment(opt.env_allow, opt.threads);
  std::vector<char*> envp;
  for (std::string& s : env) envp.push_back(s.data());
  envp.push_back(nullptr);
  std::vector<std::string> args{exe};
  args.insert(args.end(), opt.worker_args.begin(), opt.worker_args.end());
  args.push_back(opt.seccomp ? sandbox::seccomp_on_arg : sandbox::seccomp_off_arg);
  std::vector<char*> argv;
  for (std::string& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);
  plan.exe = exe.c_str();
  unique_fd exe_fd(open(exe.c_str(), O_RDONLY | O_CLOEXEC));
  if (exe_fd.fd < 0) return fail(errc::io_error, "cannot open " + exe + ": " + errno_text(errno));
  plan.exe_fd = exe_fd.fd;
  plan.argv = argv.data();
  plan.envp = envp.data();

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
  // EOF on the close-on-exec pipe = exec succeeded; a record = the step that failed.
  sandbox::child_failure f;
  ssize_t n;
  do n = read(err_r.fd, &f, sizeof f);
  while (n < 0 && errno == EINTR);
  if (n != 0) {
    int st;
    while (waitpid(pid, &st, 0) < 0 && errno == EINTR) {
    }
    std::string msg = "could not start the worker '" + exe + "': ";
    if (n == static_cast<ssize_t>(sizeof f)) {
      msg += std::string(sandbox::stage_name(f.stage)) + ": " + errno_text(f.error);
      if (plan.drop && f.error == EACCES)
        msg += " (it runs as " + (opt.user.empty() ? std::string("a user of its own") : "'" + opt.user + "'") +
               ": the binary and its directories must be readable and executable by any user)";
    } else {
      msg += "no report from the child";
    }
    return fail(errc::io_error, msg);
  }
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

worker_result worker::request(const wire::command& cmd, double timeout_s) {
  if (dead_) {
    worker_result r = last_end_;
    r.seconds = 0;
    return r;
  }
  worker_result r;
  if (pid_ <= 0) {
    r.end = worker_end::protocol;
    r.detail = "no worker process";
    return r;
  }
  if (!(timeout_s >= 0)) timeout_s = 0;
  timeout_s = std::min(timeout_s, 1e6);
  if (stopped_) {
    kill(pid_, SIGCONT);
    stopped_ = false;
  }
  const auto t0 = clock_type::now();
  auto after = [&](double seconds) {
    return t0 + std::chrono::duration_cast<clock_type::duration>(std::chrono::duration<double>(seconds));
  };
  // The watchdog counts the kernel's time, not the machine's: time a thread of the worker spent
  // waiting in a run queue is added to its deadline (beside builds at a load of 12 on two cores
  // an honest OpenMP kernel's timing setup ran past 3 s and read `timeout`), up to
  // `watchdog_stretch` times the timeout, so that a kernel that never answers still ends. The
  // waits are read from the first poll that waits in vain (~10 ms in), never before the command:
  // a /proc read there would add its time to a quick reply's.
  auto deadline = after(timeout_s);
  const auto last_deadline = after(timeout_s * watchdog_stretch);
  std::vector<thread_sched> waits_before;
  bool waits_read = false;
  double waited_s = 0;
  death d;
  bool eof = false;
  auto kill_now = [&](kill_reason why, std::string text) {
    if (d.killed != kill_reason::none) return;
    d.killed = why;
    d.why = std::move(text);
    kill(pid_, SIGKILL);
  };
  auto sample = [&] {
    mem_sample s = sample_memory(pid_);
    if (s.ok) {
      d.peak_vm = std::max(d.peak_vm, s.peak_vm);
      d.peak_rss = std::max({d.peak_rss, s.rss, s.hwm});
    }
    return s;
  };

  // Bytes waiting before we asked anything are forged or stale replies from a background thread.
  char stale;
  ssize_t n = read(reply_fd_, &stale, 1);
  if (n > 0) kill_now(kill_reason::protocol, "the worker wrote to its reply pipe between requests");
  if (n == 0) eof = true;  // it died (or closed the pipe) since the last request
  if (d.killed == kill_reason::none && !eof && !write_all(cmd_fd_, &cmd, sizeof cmd)) {
    if (errno == EPIPE)
      eof = true;
    else
      kill_now(kill_reason::protocol, "the worker does not read its commands");
  }

  alignas(wire::reply) unsigned char buf[sizeof(wire::reply)];
  size_t got = 0;
  const bool judged = cmd.kind != wire::op::load || record_.judges_loads();
  while (d.killed == kill_reason::none && !eof && got < sizeof buf) {
    const auto now = clock_type::now();
    if (now >= deadline && waits_read && now < last_deadline) {
      unsigned long long most = 0;
      for (const thread_sched& d : thread_sched_since(waits_before, thread_schedstat(pid_)))
        most = std::max(most, d.wait_ns);
      waited_s = static_cast<double>(most) * 1e-9;
      deadline = std::min(last_deadline, after(timeout_s + waited_s));
    }
    if (now >= deadline) {
      kill_now(kill_reason::timeout,
               "no reply within " + seconds_text(timeout_s) + " (wall-clock watchdog" +
                   (waited_s > 0 ? "; " + seconds_text(std::chrono::duration<double>(now - t0).count()) +
                                       " on the clock, " + seconds_text(waited_s) + " of them waiting for a CPU"
                                 : std::string()) +
                   ")");
      break;
    }
    // Memory is sampled each time poll has waited ~10 ms in vain, never between the command and
    // a quick reply: a /proc read there would add its ~30 us to the measured time.
    const auto left = std::chrono::ceil<std::chrono::milliseconds>(deadline - now).count();
    pollfd pfd{reply_fd_, POLLIN, 0};
    int pr = poll(&pfd, 1, static_cast<int>(std::clamp<long long>(left, 1, 10)));
    if (pr < 0 && errno != EINTR) {
      kill_now(kill_reason::protocol, "poll on the reply pipe: " + errno_text(errno));
      break;
    }
    if (pr == 0) {
      // The op record is read on these ~10 ms ticks, not polled: a reader woken by every write
      // cost the worker 14 us an op on the 2-core VM, one reading on ticks 6 us (bench note
      // in op_record.h). A full pipe (1 MiB) stops the observer until the next tick.
      drain_record(judged);
      if (!waits_read) {
        waits_before = thread_schedstat(pid_);
        waits_read = true;
      }
      mem_sample s = sample();
      if (s.ok && rss_limit_ && s.rss > rss_limit_) {
        kill_now(kill_reason::memory, "resident memory " + mib(s.rss) + " over the limit of " +
                                          mib(rss_limit_) + " (watchdog)");
        break;
      }
    }
    if (pr <= 0) continue;
    ssize_t k = read(reply_fd_, buf + got, sizeof buf - got);
    if (k > 0)
      got += static_cast<size_t>(k);
    else if (k == 0 || (errno != EAGAIN && errno != EINTR))
      eof = true;
  }
  r.seconds = std::chrono::duration<double>(clock_type::now() - t0).count();

  if (got == sizeof buf && d.killed == kill_reason::none) {
    std::memcpy(&r.reply, buf, sizeof buf);
    r.reply.message[wire::message_bytes - 1] = 0;
    const auto st = static_cast<int32_t>(r.reply.st);
    if (r.reply.magic == sandbox::death_note_magic) {
      d.death_note = true;
      r.reply = wire::reply{};  // not an answer: the detail tells the story
      eof = true;               // it is dying: reap it below
    } else if (r.reply.magic != wire::magic || st < 0 ||
               st > static_cast<int32_t>(wire::status::forbidden)) {
      r.reply = wire::reply{};
      kill_now(kill_reason::protocol, "the worker sent a malformed reply");
    } else {
      mem_sample s = sample();
      r.max_rss_bytes = s.hwm;
      // A kernel that reports an error after a failed allocation near the limit ran out of
      // memory; the worker is killed so that the rule "not replied => dead" holds.
      if (r.reply.st == wire::status::kernel_error && s.ok &&
          ((address_space_ && s.peak_vm >= address_space_ / 2) ||
           (rss_limit_ && s.hwm >= rss_limit_ / 2))) {
        kill_now(kill_reason::memory,
                 "the kernel failed after using its memory (address space peak " + mib(s.peak_vm) +
                     " of " + limit_text(address_space_) + "): " + r.reply.message);
      } else {
        r.end = worker_end::replied;
        // What the record holds now was written before the reply (the observer writes before
        // each op runs); a refusal there overrides the worker's own answer.
        drain_record(judged);
        if (!record_.violation().empty() && r.reply.st != wire::status::forbidden) {
          r.reply.st = wire::status::forbidden;
          r.reply.code = 0;
          std::snprintf(r.reply.message, sizeof r.reply.message, "%s", record_.violation().c_str());
        }
        r.detail = r.reply.message;
        if (frozen_) stop_now();
        return r;
      }
    }
  }

  // The worker is dead or dying. If it closed its pipe by itself, give it until the deadline to
  // exit (an exit() in progress); after that it is a worker that hangs up and lingers.
  bool reaped = false;
  while (eof && d.killed == kill_reason::none) {
    pid_t w = wait4(pid_, &d.status, WNOHANG, &d.ru);
    if (w == pid_) {
      reaped = true;
      break;
    }
    if (w < 0 && errno != EINTR) break;  // ECHILD: lathe set SIGCHLD to SIG_IGN
    if (clock_type::now() >= deadline) {
      kill_now(d.death_note ? kill_reason::memory : kill_reason::protocol,
               d.death_note ? "the worker reported an exhausted address space"
                            : "the worker closed its pipes but did not exit");
      break;
    }
    sample();
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
  }
  if (!reaped) {
    if (d.killed == kill_reason::none) kill_now(kill_reason::protocol, "no longer answering");
    while (wait4(pid_, &d.status, 0, &d.ru) < 0 && errno == EINTR) {
    }
  }
  dead_ = true;
  close_fd(cmd_fd_);
  close_fd(reply_fd_);
  classify(d, rss_limit_, address_space_, cpu_seconds_, r);
  last_end_ = r;
  return r;
}

}  // namespace lathe::gate
