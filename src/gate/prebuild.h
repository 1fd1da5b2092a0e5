// A suite's candidates built before any of them is evaluated (issue 24, item 2): every
// candidate's object (and a ModelNew's load_inline extensions, python_build.h) compiled into the
// content-hashed build cache, `parallel` at a time on the host's cores, before the first timed
// or GPU work. The evaluations then find their objects in the cache: a candidate's first timed
// call is never its compile, and a suite's compiles overlap instead of queueing one per task.
// Nothing here decides an outcome: each evaluation screens and builds again (a cache hit), and
// reports a failed build with its compiler's log as compile_error.
#pragma once

#include <cstddef>
#include <functional>
#include <string>
#include <vector>

#include "core/kernel.h"
#include "core/task.h"
#include "gate/gate.h"

namespace lathe::gate {

struct prebuild_job {
  const gate_config* cfg = nullptr;  // the task's (tools, cache directory, target)
  const task* t = nullptr;
  kernel_bundle candidate;
};

enum class prebuild_status : uint8_t {
  built,    // compiled now
  cached,   // already in the cache (its success or its recorded failure)
  failed,   // compiled now and failed: its evaluation reports compile_error with the log
  skipped,  // not built: refused by the screen, or not for this task's platform or host
};
const char* to_string(prebuild_status s);

struct prebuild_outcome {
  std::string task, kernel;  // task name, candidate name
  prebuild_status status = prebuild_status::skipped;
  bool ok = false;          // an object is in the cache
  double seconds = 0;       // this build's wall time
  std::string why;          // for skipped and failed: one line
};

// Builds every job, `parallel` at a time (0: the host's cores); `done` is called after each, in
// completion order, from the calling thread.
std::vector<prebuild_outcome> prebuild(const std::vector<prebuild_job>& jobs, size_t parallel,
                                       const std::function<void(const prebuild_outcome&)>& done = {});

}  // namespace lathe::gate
