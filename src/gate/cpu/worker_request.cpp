// One request to a worker, on lathe's side (worker.h): the command sent, the reply awaited under
// a watchdog that counts the kernel's time and samples its memory, the reply judged (a forged or
// malformed one, a failure after exhausting memory, a refusal in the op record), and a worker
// that died or hung up reaped and its end classified from the kernel's word (wait4, /proc).
#include <poll.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <csignal>
#include <cstdio>
#include <cstring>
#include <thread>

#include "gate/cpu/fd.h"
#include "gate/cpu/sandbox.h"
#include "gate/cpu/worker.h"
#include "gate/cpu/worker_end.h"

namespace lathe::gate {
namespace detail {

using clock_type = std::chrono::steady_clock;

// A request in flight: its clock, its watchdog and what is known of the worker's end so far.
struct request_watch {
  request_watch(pid_t pid, double timeout_s)
      : pid(pid), t0(clock_type::now()), timeout_s(timeout_s), deadline(after(timeout_s)),
        last_deadline(after(timeout_s * watchdog_stretch)) {}
  clock_type::time_point after(double seconds) const {
    return t0 + std::chrono::duration_cast<clock_type::duration>(std::chrono::duration<double>(seconds));
  }
  void kill_now(kill_reason why, std::string text) {
    if (d.killed != kill_reason::none) return;
    d.killed = why;
    d.why = std::move(text);
    kill(pid, SIGKILL);
  }
  mem_sample sample() {
    mem_sample s = sample_memory(pid);
    if (s.ok) {
      d.peak_vm = std::max(d.peak_vm, s.peak_vm);
      d.peak_rss = std::max({d.peak_rss, s.rss, s.hwm});
    }
    return s;
  }
  bool live() const { return d.killed == kill_reason::none && !eof; }

  const pid_t pid;
  const clock_type::time_point t0;
  const double timeout_s;
  // The watchdog counts the kernel's time, not the machine's: time a thread of the worker spent
  // waiting in a run queue is added to its deadline (beside builds at a load of 12 on two cores
  // an honest OpenMP kernel's timing setup ran past 3 s and read `timeout`), up to
  // `watchdog_stretch` times the timeout, so that a kernel that never answers still ends. The
  // waits are read from the first poll that waits in vain (~10 ms in), never before the command:
  // a /proc read there would add its time to a quick reply's.
  clock_type::time_point deadline;
  const clock_type::time_point last_deadline;
  std::vector<thread_sched> waits_before;
  bool waits_read = false;
  double waited_s = 0;
  death d;
  bool eof = false;
};

}  // namespace detail

using namespace detail;

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
  request_watch rw(pid_, timeout_s);
  send_command(cmd, rw);
  alignas(wire::reply) unsigned char buf[sizeof(wire::reply)];
  const bool judged = cmd.kind != wire::op::load || record_.judges_loads();
  const size_t got = await_reply(rw, buf, sizeof buf, judged);
  r.seconds = std::chrono::duration<double>(clock_type::now() - rw.t0).count();
  if (got == sizeof buf && rw.d.killed == kill_reason::none && accept_reply(rw, buf, judged, r)) {
    if (frozen_) stop_now();
    return r;
  }
  return reap(rw, std::move(r));
}

void worker::send_command(const wire::command& cmd, request_watch& rw) {
  // Bytes waiting before we asked anything are forged or stale replies from a background thread.
  char stale;
  ssize_t n = read(reply_fd_, &stale, 1);
  if (n > 0) rw.kill_now(kill_reason::protocol, "the worker wrote to its reply pipe between requests");
  if (n == 0) rw.eof = true;  // it died (or closed the pipe) since the last request
  if (rw.live() && !write_all(cmd_fd_, &cmd, sizeof cmd)) {
    if (errno == EPIPE)
      rw.eof = true;
    else
      rw.kill_now(kill_reason::protocol, "the worker does not read its commands");
  }
}

size_t worker::await_reply(request_watch& rw, unsigned char* buf, size_t size, bool judged) {
  size_t got = 0;
  while (rw.live() && got < size) {
    const auto now = clock_type::now();
    if (now >= rw.deadline && rw.waits_read && now < rw.last_deadline) {
      unsigned long long most = 0;
      for (const thread_sched& t : thread_sched_since(rw.waits_before, thread_schedstat(pid_)))
        most = std::max(most, t.wait_ns);
      rw.waited_s = static_cast<double>(most) * 1e-9;
      rw.deadline = std::min(rw.last_deadline, rw.after(rw.timeout_s + rw.waited_s));
    }
    if (now >= rw.deadline) {
      rw.kill_now(kill_reason::timeout,
                  "no reply within " + seconds_text(rw.timeout_s) + " (wall-clock watchdog" +
                      (rw.waited_s > 0 ? "; " + seconds_text(std::chrono::duration<double>(now - rw.t0).count()) +
                                             " on the clock, " + seconds_text(rw.waited_s) + " of them waiting for a CPU"
                                       : std::string()) +
                      ")");
      break;
    }
    // Memory is sampled each time poll has waited ~10 ms in vain, never between the command and
    // a quick reply: a /proc read there would add its ~30 us to the measured time.
    const auto left = std::chrono::ceil<std::chrono::milliseconds>(rw.deadline - now).count();
    pollfd pfd{reply_fd_, POLLIN, 0};
    int pr = poll(&pfd, 1, static_cast<int>(std::clamp<long long>(left, 1, 10)));
    if (pr < 0 && errno != EINTR) {
      rw.kill_now(kill_reason::protocol, "poll on the reply pipe: " + errno_text(errno));
      break;
    }
    if (pr == 0) {
      // The op record is read on these ~10 ms ticks, not polled: a reader woken by every write
      // cost the worker 14 us an op on the 2-core VM, one reading on ticks 6 us (bench note
      // in op_record.h). A full pipe (1 MiB) stops the observer until the next tick.
      drain_record(judged);
      if (!rw.waits_read) {
        rw.waits_before = thread_schedstat(pid_);
        rw.waits_read = true;
      }
      mem_sample s = rw.sample();
      if (s.ok && rss_limit_ && s.rss > rss_limit_) {
        rw.kill_now(kill_reason::memory, "resident memory " + mib(s.rss) + " over the limit of " +
                                             mib(rss_limit_) + " (watchdog)");
        break;
      }
    }
    if (pr <= 0) continue;
    ssize_t k = read(reply_fd_, buf + got, size - got);
    if (k > 0)
      got += static_cast<size_t>(k);
    else if (k == 0 || (errno != EAGAIN && errno != EINTR))
      rw.eof = true;
  }
  return got;
}

bool worker::accept_reply(request_watch& rw, const unsigned char* buf, bool judged, worker_result& r) {
  std::memcpy(&r.reply, buf, sizeof r.reply);
  r.reply.message[wire::message_bytes - 1] = 0;
  const auto st = static_cast<int32_t>(r.reply.st);
  if (r.reply.magic == sandbox::death_note_magic) {
    rw.d.death_note = true;
    r.reply = wire::reply{};  // not an answer: the detail tells the story
    rw.eof = true;            // it is dying: reap it
    return false;
  }
  if (r.reply.magic != wire::magic || st < 0 || st > static_cast<int32_t>(wire::status::forbidden)) {
    r.reply = wire::reply{};
    rw.kill_now(kill_reason::protocol, "the worker sent a malformed reply");
    return false;
  }
  mem_sample s = rw.sample();
  r.max_rss_bytes = s.hwm;
  // A kernel that reports an error after a failed allocation near the limit ran out of memory;
  // the worker is killed so that the rule "not replied => dead" holds.
  if (r.reply.st == wire::status::kernel_error && s.ok &&
      ((address_space_ && s.peak_vm >= address_space_ / 2) || (rss_limit_ && s.hwm >= rss_limit_ / 2))) {
    rw.kill_now(kill_reason::memory, "the kernel failed after using its memory (address space peak " +
                                         mib(s.peak_vm) + " of " + limit_text(address_space_) +
                                         "): " + r.reply.message);
    return false;
  }
  r.end = worker_end::replied;
  // What the record holds now was written before the reply (the observer writes before each op
  // runs); a refusal there overrides the worker's own answer.
  drain_record(judged);
  if (!record_.violation().empty() && r.reply.st != wire::status::forbidden) {
    r.reply.st = wire::status::forbidden;
    r.reply.code = 0;
    std::snprintf(r.reply.message, sizeof r.reply.message, "%s", record_.violation().c_str());
  }
  r.detail = r.reply.message;
  return true;
}

worker_result worker::reap(request_watch& rw, worker_result r) {
  death& d = rw.d;
  // The worker is dead or dying. If it closed its pipe by itself, give it until the deadline to
  // exit (an exit() in progress); after that it is a worker that hangs up and lingers.
  bool reaped = false;
  while (rw.eof && d.killed == kill_reason::none) {
    pid_t w = wait4(pid_, &d.status, WNOHANG, &d.ru);
    if (w == pid_) {
      reaped = true;
      break;
    }
    if (w < 0 && errno != EINTR) break;  // ECHILD: lathe set SIGCHLD to SIG_IGN
    if (clock_type::now() >= rw.deadline) {
      rw.kill_now(d.death_note ? kill_reason::memory : kill_reason::protocol,
                  d.death_note ? "the worker reported an exhausted address space"
                               : "the worker closed its pipes but did not exit");
      break;
    }
    rw.sample();
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
  }
  if (!reaped) {
    if (d.killed == kill_reason::none) rw.kill_now(kill_reason::protocol, "no longer answering");
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
