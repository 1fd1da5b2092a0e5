// The profile stage (PROTOCOL.md: time (-> profile)): on request, Nsight Compute's counters for a
// CUDA kernel. `lathe profile` finds ncu, builds the kernel, and runs
//
//   ncu <options> <lathe> profile-run TASK KERNEL …
//
// where `profile-run` (profile_run below) starts a worker the usual way and calls the kernel a few
// times on one shape set; ncu follows it into the worker and counts. Nothing is timed and nothing
// is checked: a profile explains a time, it never decides one. An absent tool or a profiler
// failure is reported as it is, never replaced by made-up figures.
#pragma once

#include <cstdint>
#include <filesystem>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/error.h"
#include "core/kernel.h"
#include "core/profile.h"
#include "core/target.h"
#include "core/task.h"
#include "gate/build.h"
#include "gate/cpu/worker.h"

namespace lathe::gate {

// ---- what is asked of ncu (the one list of metric names) --------------------------------------

// What a metric of the list becomes in a profiled_kernel.
enum class profile_figure : uint8_t {
  duration,            // gpu__time_duration.sum
  compute_throughput,  // sm__throughput, % of peak
  memory_throughput,   // gpu__compute_memory_throughput, % of peak
  dram_throughput,     // dram__throughput, % of peak
  achieved_occupancy,  // sm__warps_active, % of the maximum
  l2_hit_rate,         // lts__t_sector_hit_rate
  cycles_per_issue,    // smsp__average_warp_latency_per_inst_issued
  stall,               // smsp__average_warps_issue_stalled_<reason>_per_issue_active
  device_name,         // device__attribute_display_name (text)
};

struct profile_metric {
  std::string name;  // ncu's metric name with its rollup
  profile_figure figure;
  std::string stall_reason;  // for profile_figure::stall
};

// Every metric lathe asks for, for kernels built for `arch` ("sm_90a": Hopper adds the gmma
// stall reason, a metric older devices do not have and ncu would refuse).
std::vector<profile_metric> profile_metrics(const std::string& arch);

// lathe's own helper kernels (functions whose name starts with this) are left out of a profile.
constexpr std::string_view helper_kernel_prefix = "lathe_";

// The function's own name in a kernel name as ncu prints it: without return type, scopes,
// template arguments and parameters ("void a::(anonymous namespace)::f<int>(int *)" -> "f").
std::string_view kernel_function_name(std::string_view name);
// Whether that name starts with helper_kernel_prefix.
bool is_helper_kernel(std::string_view name);

// ---- the tool ----------------------------------------------------------------------------------

// ncu in `path_env` (a PATH value), then <root>/usr/local/cuda/bin/ncu, then the newest
// <root>/opt/nvidia/nsight-compute/<version>/ncu and <root>/usr/local/cuda/nsight-compute-*/ncu.
// nullopt when there is none. `root` is "/" except in tests.
std::optional<std::filesystem::path> find_ncu(std::string_view path_env,
                                              const std::filesystem::path& root = "/");
// Where find_ncu looks, for messages.
std::string ncu_search_description();
// `ncu --version`'s "Version …" line without the word; empty when ncu does not answer.
std::string ncu_version(const std::filesystem::path& ncu);

// The full command: ncu, its options, then `app` (the program it starts and follows).
// --clock-control none (the GPU runs at the clocks it runs at when timed; ncu's default locks
// them to base), every process of the tree (the kernel runs in a worker that lathe starts),
// the raw page as CSV with units in base units. No kernel filter: lathe's helpers are left out
// when the table is read (parse_ncu_csv).
std::vector<std::string> ncu_command(const std::filesystem::path& ncu, const std::string& arch,
                                     const std::vector<std::string>& app);

// ncu's raw page (--csv --page raw): lines before the header (==PROF== messages, the program's
// output) are skipped; the header row names the columns, the second row their units, then one
// row per profiled launch. Launches of one function with one launch configuration are averaged;
// lathe's helper kernels (is_helper_kernel) are skipped. An error when there is no table or no
// launch of anything but helpers in it.
result<std::vector<profiled_kernel>> parse_ncu_csv(std::string_view text);

// The device of the first profiled launch: its name (device__attribute_display_name) and
// architecture ("sm_90" from the CC column). Empty fields when absent.
struct ncu_device {
  std::string name, arch;
};
ncu_device parse_ncu_device(std::string_view text);

// One line that says why a profiler run failed, taken verbatim from its output: ncu's first
// ==ERROR== line (ERR_NVGPUCTRPERM…), else profile-run's own message, else ncu's "application
// returned an error code", else the last line.
std::string ncu_failure(std::string_view output);

// ---- the child that ncu wraps ------------------------------------------------------------------

struct profile_run_config {
  const task* t = nullptr;
  kernel_bundle kernel;
  std::string shape_set;  // empty: the task's timed shape set
  uint32_t launches = 3;  // lathe_launch calls under the profiler
  std::filesystem::path cache_dir;
  toolchain tools;
  target host;              // the CPU target: the reference is built for it
  sandbox_options sandbox;  // worker_exe: lathe-worker; lathe-worker-cuda is found beside it
  // Run the worker as lathe's own user (no privilege drop). Where the driver lets only
  // administrators read the performance counters (its default), a worker that drops to `nobody`
  // gets ERR_NVGPUCTRPERM. Only for kernels the user trusts.
  bool trust_kernel = false;
  double call_timeout_s = 300;  // per worker request; replay under ncu is slow
  std::function<void(const std::string&)> progress;
  // When set: what profile-run sees and does, line by line (its identity, environment and open
  // descriptors, the worker's environment, whether ncu's libraries are mapped into the worker,
  // how it ended), for a profile that comes back empty.
  std::function<void(const std::string&)> diagnostic;
};

// The shape set named `name` (the timed one when empty); nullptr when the task has none such.
const shape_set* profile_shape(const task& t, const std::string& name);

// Builds the kernel and the task's reference through the cache. `lathe profile` calls it before
// starting ncu (compile errors are reported without a profiler, and the cache is warm); the child
// calls it again and finds both cached.
struct profile_objects {
  build_output kernel, reference;
};
result<profile_objects> build_for_profile(const profile_run_config& cfg);

// The child (`lathe profile-run`): builds (cached), starts a CUDA worker, stages one trial's
// inputs for the shape set and calls the kernel `launches` times. No timing, no checks.
result<void> profile_run(const profile_run_config& cfg);

// The names of environment variables the profiled worker inherits: what ncu put into this
// process's environment (its injection library, the process tree's tokens), minus anything
// named like a secret unless it is one of ncu's (NV…, NSIGHT…, CUDA_…, TPS_…, TREE…, LD_PRELOAD,
// TMPDIR). `envp` as in main(); normally `environ`.
std::vector<std::string> profiler_environment(const char* const* envp);

}  // namespace lathe::gate
