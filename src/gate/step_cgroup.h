// Memory and process limits for one sandboxed step as a whole (a compile with its children, a
// record step and what it starts), through the kernel's control groups where lathe may make them:
// cgroup v2's unified tree (Ubuntu 24.04, the GPU machine) or v1's `memory` and `pids` hierarchies
// (the 2-core CI VM). RLIMIT_AS bounds each process alone: four 3 GiB processes of one step fit
// under it and not in a 24 GiB machine beside a timed baseline. Where no cgroup can be made (not
// root, a read-only or delegated-away tree), `summary` says so and the step runs with its rlimits
// only.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace lathe::gate {

struct step_limits {
  uint64_t memory_bytes = 0;  // 0: no memory limit
  uint32_t processes = 0;     // 0: no process limit
};

class step_cgroup {
 public:
  // Made under lathe's own parent group ("lathe" in each hierarchy), named uniquely per step.
  static step_cgroup make(const step_limits& limits);
  step_cgroup() = default;
  step_cgroup(step_cgroup&& o) noexcept;
  step_cgroup& operator=(step_cgroup&&) = delete;
  step_cgroup(const step_cgroup&) = delete;
  ~step_cgroup();  // kills what is left in it, then removes it

  bool active() const { return !dirs_.empty(); }
  // The files the child writes "0" into, after fork and before exec (plain system calls), to
  // join the group: one per hierarchy. Paths prepared here, so the child allocates nothing.
  const std::vector<std::string>& procs_files() const { return procs_; }
  // After the step: whether the kernel killed a process of it for memory, and the words for it.
  std::string memory_verdict() const;
  std::string summary() const { return summary_; }

 private:
  std::vector<std::string> dirs_, procs_;
  std::string memory_events_;  // v2 memory.events, or v1 memory.failcnt / memory.oom_control
  bool v2_ = false;
  std::string summary_;
};

// In the forked child: joins every group of `procs_files` (async-signal-safe). False on failure.
bool join_step_cgroup(const std::vector<std::string>& procs_files);

}  // namespace lathe::gate
