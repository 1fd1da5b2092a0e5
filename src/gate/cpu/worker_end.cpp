#include <cstdint>
#include "gate/cpu/worker_end.h"

#include <dirent.h>
#include <fcntl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>

namespace lathe::gate {

const char* to_string(worker_end e) {
  switch (e) {
    case worker_end::replied:
      return "replied";
    case worker_end::timeout:
      return "timeout";
    case worker_end::crashed:
      return "crashed";
    case worker_end::exited:
      return "exited";
    case worker_end::forbidden:
      return "forbidden";
    case worker_end::memory_limit:
      return "memory_limit";
    case worker_end::protocol:
      return "protocol";
  }
  return "unknown";
}

namespace detail {

std::string errno_text(int e) { return std::strerror(e); }

std::string mib(uint64_t bytes) {
  return std::to_string(bytes >> 20) + " MiB";
}
std::string limit_text(uint64_t bytes) {
  return bytes ? mib(bytes) : std::string("no limit");
}

std::string seconds_text(double s) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.3g s", s);
  return buf;
}

std::string signal_name(int sig) {
  if (const char* abbrev = sigabbrev_np(sig)) return std::string("SIG") + abbrev;
  return "signal " + std::to_string(sig);
}

mem_sample sample_memory(pid_t pid) {
  mem_sample s;
  char path[64];
  std::snprintf(path, sizeof path, "/proc/%d/status", static_cast<int>(pid));
  int fd = open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0) return s;
  char buf[4096];
  ssize_t n = read(fd, buf, sizeof buf - 1);
  close(fd);
  if (n <= 0) return s;
  buf[n] = 0;
  auto field = [&](const char* name) -> uint64_t {
    const char* p = std::strstr(buf, name);
    return p ? std::strtoull(p + std::strlen(name), nullptr, 10) * 1024 : 0;
  };
  s.rss = field("VmRSS:");
  s.hwm = field("VmHWM:");
  s.peak_vm = field("VmPeak:");
  s.ok = s.peak_vm > 0;  // a zombie has no memory lines
  return s;
}

long long cpu_ticks(pid_t pid) {
  char path[64];
  std::snprintf(path, sizeof path, "/proc/%d/stat", static_cast<int>(pid));
  int fd = open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0) return -1;
  char buf[2048];
  ssize_t n = read(fd, buf, sizeof buf - 1);
  close(fd);
  if (n <= 0) return -1;
  buf[n] = 0;
  // The command name (field 2) may contain spaces and parentheses: fields restart after the
  // last ')'. utime and stime are fields 14 and 15, i.e. the 12th and 13th after it.
  const char* p = std::strrchr(buf, ')');
  if (!p) return -1;
  ++p;
  long long v[13] = {};
  for (int i = 0; i < 13; ++i) {
    while (*p == ' ') ++p;
    char* end = nullptr;
    v[i] = std::strtoll(p, &end, 10);
    if (end == p) {  // the state letter (field 3) is not a number: skip it as a word
      while (*p && *p != ' ') ++p;
    } else {
      p = end;
    }
  }
  return v[11] + v[12];
}

void classify(const death& d, uint64_t rss_limit, uint64_t address_space, double cpu_seconds,
              worker_result& r) {
  r.max_rss_bytes =
      std::max<uint64_t>(r.max_rss_bytes, std::max<uint64_t>(d.peak_rss, d.ru.ru_maxrss * 1024ull));
  const double cpu = d.ru.ru_utime.tv_sec + d.ru.ru_stime.tv_sec +
                     1e-6 * (d.ru.ru_utime.tv_usec + d.ru.ru_stime.tv_usec);
  // Half the limit: a process that dies of RLIMIT_AS has usually just asked for one more big
  // block and been refused, so its peak is anywhere between "close to" and "at" the limit.
  const bool memory_evidence = d.death_note || (rss_limit && r.max_rss_bytes >= rss_limit / 2) ||
                               (address_space && d.peak_vm >= address_space / 2);
  const std::string memory_text = "address space peak " + mib(d.peak_vm) + " of " +
                                  limit_text(address_space) + ", resident peak " +
                                  mib(r.max_rss_bytes) + " of " + limit_text(rss_limit);
  switch (d.killed) {
    case kill_reason::timeout:
      r.end = worker_end::timeout;
      r.detail = d.why;
      return;
    case kill_reason::memory:
      r.end = worker_end::memory_limit;
      r.detail = d.why;
      return;
    case kill_reason::protocol:
      r.end = worker_end::protocol;
      r.detail = d.why;
      return;
    case kill_reason::none:
      break;
  }
  if (WIFEXITED(d.status)) {
    r.exit_code = WEXITSTATUS(d.status);
    if (d.death_note) {
      r.end = worker_end::memory_limit;
      r.detail = "exited with its address space exhausted (" + memory_text + ")";
      return;
    }
    r.end = worker_end::exited;
    r.detail = "the worker exited with code " + std::to_string(r.exit_code) +
               " during the request (exit() or _exit() in the kernel)";
    return;
  }
  const int sig = WIFSIGNALED(d.status) ? WTERMSIG(d.status) : 0;
  r.signal = sig;
  if (sig == SIGSYS) {
    r.end = worker_end::forbidden;
    r.detail =
        "killed by the seccomp filter (SIGSYS): a forbidden system call (write, exec, "
        "fork, socket, signal to another process…)";
  } else if (sig == SIGXCPU) {
    r.end = worker_end::timeout;
    r.detail = "CPU-time limit of " + seconds_text(cpu_seconds) + " (RLIMIT_CPU, SIGXCPU)";
  } else if (memory_evidence) {
    r.end = worker_end::memory_limit;
    r.detail = "died of " + signal_name(sig) + " after exhausting its memory (" + memory_text + ")";
  } else if (sig == SIGKILL && cpu_seconds > 0 && cpu >= cpu_seconds) {
    r.end = worker_end::timeout;
    r.detail = "CPU-time hard limit (RLIMIT_CPU, SIGKILL after " + seconds_text(cpu) + ")";
  } else {
    r.end = worker_end::crashed;
    r.detail = "the worker died of " + signal_name(sig);
  }
}

std::vector<thread_sched> thread_schedstat(pid_t pid) {
  std::vector<thread_sched> out;
  char path[96];
  std::snprintf(path, sizeof path, "/proc/%d/task", static_cast<int>(pid));
  DIR* d = opendir(path);
  if (!d) return out;
  while (const dirent* e = readdir(d)) {
    const long tid = std::strtol(e->d_name, nullptr, 10);
    if (tid <= 0) continue;
    std::snprintf(path, sizeof path, "/proc/%d/task/%ld/schedstat", static_cast<int>(pid), tid);
    const int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) continue;  // the thread ended meanwhile
    char buf[128];
    const ssize_t n = read(fd, buf, sizeof buf - 1);
    close(fd);
    if (n <= 0) continue;
    buf[n] = 0;
    unsigned long long run = 0, wait = 0;
    if (std::sscanf(buf, "%llu %llu", &run, &wait) == 2) out.push_back({static_cast<pid_t>(tid), run, wait});
  }
  closedir(d);
  return out;
}

std::vector<thread_sched> thread_sched_since(const std::vector<thread_sched>& before,
                                             const std::vector<thread_sched>& now) {
  std::vector<thread_sched> out;
  for (const thread_sched& t : now) {
    thread_sched was{t.tid, 0, 0};
    for (const thread_sched& b : before)
      if (b.tid == t.tid) was = b;
    out.push_back({t.tid, t.run_ns > was.run_ns ? t.run_ns - was.run_ns : 0,
                   t.wait_ns > was.wait_ns ? t.wait_ns - was.wait_ns : 0});
  }
  return out;
}

}  // namespace detail
}  // namespace lathe::gate
