// A worker process running one kernel, seen from the trusted side. The worker is hostile: it
// may crash, hang, exit, spin threads, allocate without bound or try to escape; every such end
// is classified here, and lathe survives all of them.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

#include "core/error.h"
#include "gate/cpu/op_record.h"
#include "gate/cpu/wire.h"

namespace lathe::gate {

// A shared-memory region (memfd) mapped in lathe and inherited by workers.
class shared_region {
 public:
  static result<shared_region> create(uint64_t bytes);
  shared_region() = default;
  shared_region(shared_region&&) noexcept;
  shared_region& operator=(shared_region&&) noexcept;
  ~shared_region();
  uint8_t* data() const { return data_; }
  uint64_t size() const { return size_; }
  int fd() const { return fd_; }
  // Every page of the region allocated and mapped here at once (MADV_POPULATE_WRITE), before
  // lathe writes it: on the 2-core VM a page's first touch by a fault cost ~15 us, populated in
  // bulk about half that, and a timing stage stages some 900 MiB (12 regions of axpy's 72 MiB).
  void populate() const;

 private:
  int fd_ = -1;
  uint8_t* data_ = nullptr;
  uint64_t size_ = 0;
};

// RLIMIT_NOFILE of a CUDA worker: the driver opens its device nodes, event and pipe descriptors
// (a few dozen seen on the H200); CPU workers need a few.
constexpr uint64_t cuda_open_files = 1024;

struct sandbox_options {
  std::filesystem::path worker_exe;   // lathe-worker
  // Arguments before the seccomp switch: empty for lathe-worker; the script and its options
  // when worker_exe is an interpreter (gate/python_kernel.h).
  std::vector<std::string> worker_args;
  bool drop_privileges = true;        // when root: run as a user of its own, or as `user`
  std::string user;                   // empty: a uid of its own per worker (sandbox.h own_uid)
  bool private_proc = true;           // when dropping: a /proc without other users' processes
  // With private_proc: network, IPC and UTS namespaces of its own (sandbox.h child_plan). Off for
  // CUDA workers: CUDA IPC between a kernel's worker and the trusted oracle needs one IPC
  // namespace, until the H200 shows otherwise.
  bool own_namespaces = true;
  uint64_t open_files = 64;           // RLIMIT_NOFILE (CUDA workers: more, for the driver)
  uint32_t threads = 0;               // OMP/OpenBLAS threads; 0 = all cores
  // A CPU slot's cores (gate/cpu_slot.h): the worker is pinned to them before exec. Empty: the
  // cores lathe may run on, unpinned.
  std::vector<uint32_t> cores;
  uint64_t address_space_bytes = uint64_t{8} << 30;  // RLIMIT_AS (CPU workers only)
  uint64_t rss_limit_bytes = uint64_t{6} << 30;      // resident-memory watchdog
  double cpu_seconds = 600;           // RLIMIT_CPU of the whole worker
  bool seccomp = true;                // block writes, exec, fork, sockets… while the kernel runs
  // Allow-list of environment variable names copied from lathe's environment (plus what the
  // sandbox sets itself: OMP_*, OPENBLAS_*, PATH, HOME, LANG).
  std::vector<std::string> env_allow = {"LANG", "LC_ALL", "TZ"};
  // A Python candidate's torch policy (gate/cpu/op_record.h): other than `allowed`, the worker
  // gets a record pipe (wire.h record_fd) that lathe reads during every request and judges; a
  // reply is `forbidden` once the record shows what the policy refuses.
  op_policy ops;
};

// How a request to the worker ended.
enum class worker_end : uint8_t {
  replied,       // the worker answered (see reply.st)
  timeout,       // wall-clock watchdog or CPU-time limit fired
  crashed,       // died of a signal (not SIGSYS / SIGXCPU / our kill)
  exited,        // called exit()/_exit() during the request
  forbidden,     // killed by the seccomp filter (SIGSYS)
  memory_limit,  // resident-memory watchdog, or died with its address space exhausted
  protocol,      // sent garbage
};
const char* to_string(worker_end e);

struct worker_result {
  worker_end end = worker_end::replied;
  wire::reply reply;
  double seconds = 0;        // wall time of the request measured by lathe (not by the worker)
  int signal = 0;            // when crashed
  int exit_code = 0;         // when exited
  uint64_t max_rss_bytes = 0;
  std::string detail;        // human-readable description of the end
  bool ok() const { return end == worker_end::replied && reply.st == wire::status::ok; }
};

// A request's wall-clock watchdog fires after its timeout plus the longest time one of the
// worker's threads waited for a CPU meanwhile (a loaded machine's time, not the kernel's), and
// after this many timeouts whatever the waits were.
constexpr double watchdog_stretch = 8;

namespace detail {
struct request_watch;
}

class worker {
 public:
  // Starts lathe-worker with the region and the object fd; de-privileged when lathe is root.
  static result<worker> spawn(const sandbox_options& opt, const shared_region& region,
                              int object_fd);
  worker() = default;
  worker(worker&&) noexcept;
  worker& operator=(worker&&) noexcept;
  ~worker();  // kills and reaps

  worker_result load(double timeout_s);
  worker_result setup(const wire::command& setup_cmd, double timeout_s);
  worker_result run(uint32_t first_slot, uint32_t rotate, uint64_t calls, double timeout_s);
  // CUDA workers: copy `count` slots from the region to the device (upload) or back.
  worker_result transfer(wire::op direction, uint32_t first_slot, uint32_t count, double timeout_s);
  // Any other command (device trials, comparability timing: wire.h).
  worker_result request(const wire::command& cmd, double timeout_s);

  // CPU seconds the worker used (all threads) while idle over `window_s` after a request:
  // a kernel that leaves threads spinning shows here (PROTOCOL.md: resource_limit).
  double idle_cpu_seconds(double window_s) const;
  // The same window, counted as the seconds the worker's threads ran *or waited to run*
  // (schedstat): a thread left spinning counts its whole window however loaded the machine is,
  // where its CPU time shrinks with its share of a core (under a load of 9 on two cores a
  // spinning thread used 22 % of one and passed a 30 % threshold). Negative where the kernel
  // keeps no schedstat.
  double idle_demand_seconds(double window_s) const;
  // Threads alive in the worker now (from /proc/<pid>/task).
  int thread_count() const;
  // The files mapped into the worker now (/proc/<pid>/maps), each once; empty with `readable`
  // false where lathe may not read them (not root: the worker is not dumpable).
  std::vector<std::string> mapped_files(bool& readable) const;
  pid_t pid() const { return pid_; }
  bool alive() const { return pid_ > 0 && !dead_; }

  // Timing: the worker is stopped (SIGSTOP, which it cannot catch) from the moment its reply is
  // read until its next request, so that none of its threads runs while another worker is timed
  // or lathe checks its outputs. A kernel that forged an early reply and computed after lathe's
  // clock stopped, or a thread that burned the CPU while the baseline ran, got `ok` at 2.5x-15x.
  void freeze_between_requests();
  void thaw();  // runs again until its next request ends (idle checks measure a running worker)

 private:
  pid_t pid_ = -1;
  int cmd_fd_ = -1, reply_fd_ = -1;
  int record_fd_ = -1;  // the op record's read end (lathe's alone), with record_ its judge
  op_record record_;
  bool dead_ = false;  // set once the process is reaped: never signal a pid that may be reused
  uint64_t rss_limit_ = 0;
  uint64_t address_space_ = 0;  // RLIMIT_AS given to the worker: a peak near it means exhaustion
  double cpu_seconds_ = 0;      // RLIMIT_CPU: a SIGKILL after this much CPU is its hard limit
  worker_result last_end_;      // returned again by every request after the worker died
  bool frozen_ = false;         // freeze_between_requests
  bool stopped_ = false;        // stopped now by lathe
  void stop_now();
  void drain_record(bool judged);  // reads what the record pipe holds now, never waits
  // One request's parts (worker_request.cpp): the command sent; the reply awaited under the
  // watchdog (bytes read); a whole reply judged (false: not an answer, the worker is dying or
  // killed); the worker reaped and its end classified.
  void send_command(const wire::command& cmd, detail::request_watch& rw);
  size_t await_reply(detail::request_watch& rw, unsigned char* buf, size_t size, bool judged);
  bool accept_reply(detail::request_watch& rw, const unsigned char* buf, bool judged, worker_result& r);
  worker_result reap(detail::request_watch& rw, worker_result r);
};

}  // namespace lathe::gate
