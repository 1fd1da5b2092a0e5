// How a worker's request ended, from what the kernel says about the process: the pieces of
// worker.cpp that read /proc and wait4 results, apart so that worker.cpp stays about requests.
#pragma once

#include <sys/resource.h>
#include <sys/types.h>

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "gate/cpu/worker.h"

namespace lathe::gate::detail {

std::string mib(uint64_t bytes);
std::string errno_text(int e);  // strerror's text
std::string limit_text(uint64_t bytes);  // "no limit" for 0
std::string seconds_text(double s);
std::string signal_name(int sig);  // "SIGSEGV"

// Memory figures of a live process from /proc/<pid>/status (bytes).
struct mem_sample {
  bool ok = false;  // false when the process is gone or a zombie
  uint64_t rss = 0, hwm = 0, peak_vm = 0;
};
mem_sample sample_memory(pid_t pid);

// utime + stime of the whole thread group, in clock ticks; -1 when the process is gone.
long long cpu_ticks(pid_t pid);
// Per thread of `pid`, the nanoseconds it ran and the nanoseconds it waited to run, in a run
// queue (/proc/<pid>/task/<tid>/schedstat, fields 1 and 2); empty where the kernel keeps no
// schedstat.
struct thread_sched {
  pid_t tid = 0;
  unsigned long long run_ns = 0, wait_ns = 0;
};
std::vector<thread_sched> thread_schedstat(pid_t pid);
// Per thread in `now`, what it ran and waited since `before` was read (a thread started since
// counts from nothing): the idle check sums them, the watchdog takes the longest wait.
std::vector<thread_sched> thread_sched_since(const std::vector<thread_sched>& before,
                                             const std::vector<thread_sched>& now);

enum class kill_reason { none, timeout, memory, protocol };

// Everything known about a worker that just died.
struct death {
  int status = 0;  // from wait4
  rusage ru{};
  kill_reason killed = kill_reason::none;
  std::string why;          // our reason, when we killed it
  bool death_note = false;  // the worker's own handler reported an exhausted address space
  uint64_t peak_vm = 0, peak_rss = 0;  // sampled while waiting
};

// Sets r.end, r.detail, r.signal, r.exit_code and r.max_rss_bytes.
void classify(const death& d, uint64_t rss_limit, uint64_t address_space, double cpu_seconds,
              worker_result& r);

}  // namespace lathe::gate::detail
