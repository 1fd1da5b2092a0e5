// The CUDA target of this machine: what lathe-probe-cuda (src/probe/) reads from the device and
// measures, and the capabilities that follow from the compute capability. No CUDA dependency
// here: the probe is a separate program, so lathe itself builds and is tested without a GPU.
#pragma once

#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

#include "core/error.h"
#include "core/target.h"

namespace lathe::gate {

// One object printed by `lathe-probe-cuda` (schema lathe.probe-cuda/1, docs/schemas.md).
struct gpu_info {
  std::string name;
  std::string uuid;
  int32_t cc_major = 0, cc_minor = 0;
  uint32_t sm_count = 0;
  uint64_t l2_bytes = 0;
  uint64_t memory_bytes = 0;
  uint64_t smem_optin_bytes = 0;
  uint64_t smem_per_sm_bytes = 0;
  uint32_t registers_per_sm = 0;
  uint32_t sm_clock_mhz = 0;
  uint32_t mem_clock_mhz = 0;
  uint32_t memory_bus_bits = 0;
  int32_t driver_version = 0;   // cudaDriverGetVersion: 1000 * major + 10 * minor
  int32_t runtime_version = 0;  // cudaRuntimeGetVersion
  // Measured ceilings; 0 when the probe ran with --no-measure.
  double copy_bytes_per_s = 0;    // device-to-device copy far beyond L2, read + write bytes
  double cache_bytes_per_s = 0;   // the same within L2
  double tensor_flops_per_s = 0;  // cuBLAS bf16 GEMM, fp32 accumulate, 8192^3
  double flops_per_s = 0;         // cuBLAS SGEMM (default math mode: no TF32), 8192^3
};

// The probe's stdout. An object with "error" (the probe failed, and says why) is an error.
result<gpu_info> parse_probe_json(const std::string& text);

// The architecture lathe builds for on a device: "sm_90a" on Hopper (the arch-specific target;
// wgmma and setmaxnreg exist only there, and a build targets one device, so nothing is lost),
// "sm_XYa" on every later architecture with such a target, "sm_XY" before Hopper.
std::string cuda_arch(int32_t cc_major, int32_t cc_minor);

// The PTX features a device of this compute capability offers, sorted: mma.sync (7.0),
// ldmatrix (7.5), cp.async and bf16 (8.0), fp8 (8.9), cluster and tma (9.0), wgmma and
// setmaxnreg (sm_90a only: Blackwell has neither wgmma nor, for now here, setmaxnreg).
std::vector<std::string> cuda_capabilities(int32_t cc_major, int32_t cc_minor);

// A lathe target from the probe's reading: platform cuda, cuda_arch, capabilities, cores = SMs,
// llc_bytes = L2, and the measured ceilings.
target to_target(const gpu_info& g);

// Runs `probe_exe` (with --no-measure unless `measure`) for device `device` and builds its
// target. Measuring takes the device's timing lock ("cuda<N>"), so that it neither disturbs nor
// is disturbed by a timing in another lathe process, and lasts a few seconds.
result<target> detect_gpu_target(const std::filesystem::path& probe_exe, bool measure,
                                 unsigned device = 0);

}  // namespace lathe::gate
