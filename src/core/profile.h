// A hardware profile of one kernel: the gate's optional last stage (PROTOCOL.md: time (->
// profile)). Nsight Compute's counters for every CUDA function the kernel launched, bound to the
// kernel hash, the task's shape set and the device. Diagnostics only: nothing in a profile is
// timed or checked, and no verdict depends on it. Stored append-only (store/), printed by cli/,
// serialized as lathe.profile/1 (docs/schemas.md).
#pragma once

#include <array>
#include <cstdint>
#include <map>
#include <nlohmann/json_fwd.hpp>
#include <optional>
#include <string>
#include <vector>

#include "core/target.h"

namespace lathe {

// Cycles between two instructions issued by a warp that it spent stalled for one reason,
// averaged over the kernel (ncu's Warp State section). The reasons of one kernel add up to its
// `cycles_per_issue`.
struct warp_stall {
  std::string reason;  // ncu's name: "long_scoreboard", "barrier", "mio_throttle"…
  double cycles_per_issue = 0;
  bool operator==(const warp_stall&) const = default;
};
// ncu lists the cycle a warp issued in among the reasons, as `selected`: the issue itself, not a
// stall. (The reasons are ncu's open vocabulary, kept as its names; this one is read here.)
inline bool issue_cycle(const warp_stall& s) { return s.reason == "selected"; }

// One CUDA function (with one launch configuration) as profiled: the mean over its launches.
// A figure ncu did not report (metric missing on this device, "n/a") is nullopt, never 0.
struct profiled_kernel {
  std::string name;  // as ncu prints it: the demangled signature
  std::array<int64_t, 3> grid{}, block{};
  uint32_t launches = 0;  // launches averaged into the figures
  std::optional<double> duration_seconds;
  std::optional<double> compute_throughput_pct;  // SM throughput, % of peak (speed of light)
  std::optional<double> memory_throughput_pct;   // the busiest memory unit, % of peak
  std::optional<double> dram_throughput_pct;
  std::optional<double> achieved_occupancy_pct;  // active warps, % of the SM's maximum
  std::optional<double> l2_hit_rate_pct;
  std::optional<double> cycles_per_issue;  // cycles between two issued instructions
  std::vector<warp_stall> stalls;          // largest first
  // Every numeric column ncu printed: metric name -> mean over launches, and its unit as ncu
  // printed it. The named figures above are read from here.
  std::map<std::string, double> metrics;
  std::map<std::string, std::string> units;
};

struct profile {
  int64_t id = 0;          // store id, 0 before stored
  std::string created_at;  // set by the store
  std::string task, kernel_hash, kernel_name;
  std::string shape_set;  // the task's shape set the inputs were drawn for
  target tgt;             // platform cuda; arch and device name as the profiler saw them
  std::string toolchain;  // the nvcc version line the object was built with
  std::string tool = "ncu";
  std::string tool_version;          // "2025.1.1.0 (build 35528883) (public-release)"
  std::vector<std::string> command;  // the profiler's command line, as run
  uint32_t launches = 0;             // lathe_launch calls made under the profiler
  std::vector<profiled_kernel> kernels;
  std::string raw_csv;  // the profiler's output, unparsed (a blob in the store)
};

// The body of lathe.profile/1 (without "schema"). `raw_csv` is included.
void to_json(nlohmann::json& j, const warp_stall& s);
void from_json(const nlohmann::json& j, warp_stall& s);
void to_json(nlohmann::json& j, const profiled_kernel& k);
void from_json(const nlohmann::json& j, profiled_kernel& k);
void to_json(nlohmann::json& j, const profile& p);
void from_json(const nlohmann::json& j, profile& p);

}  // namespace lathe
