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
  double l2_bytes_per_s = 0.0;            // CPU: every core within its own L2, summed (0: not measured)
  double flops_per_s = 0.0;               // fp32 FMA peak, all cores (CUDA: cuBLAS SGEMM)

  // CUDA only (zero or empty on CPU targets), read by lathe-probe-cuda (src/probe/).
  std::string uuid;                       // "GPU-xxxxxxxx-…", as nvidia-smi prints it
  int32_t cc_major = 0, cc_minor = 0;     // compute capability
  uint64_t memory_bytes = 0;              // device memory
  uint64_t smem_optin_bytes = 0;          // shared memory per block with the opt-in attribute
  uint64_t smem_per_sm_bytes = 0;         // shared memory per SM
  uint32_t registers_per_sm = 0;          // 32-bit registers
  uint32_t sm_clock_mhz = 0;              // peak clocks the driver reports
  uint32_t mem_clock_mhz = 0;
  uint32_t memory_bus_bits = 0;
  int32_t driver_version = 0;             // CUDA versions, 1000 * major + 10 * minor (13000)
  int32_t runtime_version = 0;
  double tensor_flops_per_s = 0.0;        // measured: cuBLAS bf16 GEMM, fp32 accumulate
};

// The state of a GPU at one moment (NVML, src/gate/nvml.h): recorded around timings, because
// a throttled or hot device times slower and a comparison across such moments is not fair.
// A field NVML could not read is 0.
struct gpu_snapshot {
  uint32_t sm_clock_mhz = 0;
  uint32_t mem_clock_mhz = 0;
  int32_t temperature_c = 0;
  double power_w = 0.0;
  uint64_t throttle_reasons = 0;          // NVML's clocks-event reason bits
  std::string time;                       // UTC, ISO 8601 with milliseconds
};

bool has_capability(const target& t, const std::string& cap);

// The ISA levels of x86-64 in order; a bundle requiring level L runs on a host of level >= L.
int x86_level(const std::string& arch);  // "x86-64" = 1, "x86-64-v2" = 2 … ; -1 if unknown

}  // namespace lathe
