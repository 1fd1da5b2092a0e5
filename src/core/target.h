// Where a kernel runs: platform, architecture, properties and capabilities read from the
// machine, never assumed.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/task.h"

namespace lathe {

struct target {
  platform plat = platform::cpu;
  std::string arch;                       // resolved ISA level: "x86-64-v3", or "sm_90a"
  std::string device;                     // CPU model name or GPU name
  std::vector<std::string> capabilities;  // "avx2", "fma", "avx512f"… (sorted)
  uint32_t cores = 1;
  uint64_t llc_bytes = 0;                 // last-level cache
  // Measured ceilings (0 = not measured yet), used for roofline floors.
  double copy_bytes_per_s = 0.0;          // read + write bandwidth of a copy larger than LLC
  double cache_bytes_per_s = 0.0;         // read + write bandwidth of a copy within the LLC
  double flops_per_s = 0.0;               // fp32 FMA peak, all cores
};

bool has_capability(const target& t, const std::string& cap);

// The ISA levels of x86-64 in order; a bundle requiring level L runs on a host of level >= L.
int x86_level(const std::string& arch);  // "x86-64" = 1, "x86-64-v2" = 2 … ; -1 if unknown

}  // namespace lathe
