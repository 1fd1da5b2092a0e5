// JSON of hardware profiles: the body of lathe.profile/1 (docs/schemas.md) and the stored record.
#include <cstdint>

#include "core/json_detail.h"
#include "core/profile.h"

namespace lathe {

using namespace json_detail;

void to_json(json& j, const warp_stall& s) {
  j = json{{"reason", s.reason}, {"cycles_per_issue", s.cycles_per_issue}};
}

void from_json(const json& j, warp_stall& s) {
  s = warp_stall{};
  get(j, "reason", s.reason);
  get_double(j, "cycles_per_issue", s.cycles_per_issue);
}

void to_json(json& j, const profiled_kernel& k) {
  j = json{{"name", k.name},         {"grid", k.grid},     {"block", k.block},
           {"launches", k.launches}, {"stalls", k.stalls}, {"metrics", k.metrics},
           {"units", k.units}};
  put_opt(j, "duration_seconds", k.duration_seconds);
  put_opt(j, "compute_throughput_pct", k.compute_throughput_pct);
  put_opt(j, "memory_throughput_pct", k.memory_throughput_pct);
  put_opt(j, "dram_throughput_pct", k.dram_throughput_pct);
  put_opt(j, "achieved_occupancy_pct", k.achieved_occupancy_pct);
  put_opt(j, "l2_hit_rate_pct", k.l2_hit_rate_pct);
  put_opt(j, "cycles_per_issue", k.cycles_per_issue);
}

void from_json(const json& j, profiled_kernel& k) {
  k = profiled_kernel{};
  get(j, "name", k.name);
  get(j, "grid", k.grid);
  get(j, "block", k.block);
  get(j, "launches", k.launches);
  get(j, "stalls", k.stalls);
  get(j, "metrics", k.metrics);
  get(j, "units", k.units);
  get_opt(j, "duration_seconds", k.duration_seconds);
  get_opt(j, "compute_throughput_pct", k.compute_throughput_pct);
  get_opt(j, "memory_throughput_pct", k.memory_throughput_pct);
  get_opt(j, "dram_throughput_pct", k.dram_throughput_pct);
  get_opt(j, "achieved_occupancy_pct", k.achieved_occupancy_pct);
  get_opt(j, "l2_hit_rate_pct", k.l2_hit_rate_pct);
  get_opt(j, "cycles_per_issue", k.cycles_per_issue);
}

void to_json(json& j, const profile& p) {
  j = json{{"id", p.id},
           {"created_at", p.created_at},
           {"task", p.task},
           {"kernel_hash", p.kernel_hash},
           {"kernel_name", p.kernel_name},
           {"shape_set", p.shape_set},
           {"target", p.tgt},
           {"toolchain", p.toolchain},
           {"tool", p.tool},
           {"tool_version", p.tool_version},
           {"command", p.command},
           {"launches", p.launches},
           {"kernels", p.kernels},
           {"raw_csv", p.raw_csv}};
}

void from_json(const json& j, profile& p) {
  p = profile{};
  get(j, "id", p.id);
  get(j, "created_at", p.created_at);
  get(j, "task", p.task);
  get(j, "kernel_hash", p.kernel_hash);
  get(j, "kernel_name", p.kernel_name);
  get(j, "shape_set", p.shape_set);
  get(j, "target", p.tgt);
  get(j, "toolchain", p.toolchain);
  get(j, "tool", p.tool);
  get(j, "tool_version", p.tool_version);
  get(j, "command", p.command);
  get(j, "launches", p.launches);
  get(j, "kernels", p.kernels);
  get(j, "raw_csv", p.raw_csv);
}

}  // namespace lathe
