// The CPU target of this machine, read from the machine (DESIGN.md: never assumed), and its
// measured ceilings for roofline floors.
#pragma once

#include "core/target.h"

namespace lathe::gate {

// Model name, resolved x86-64 level, capability flags, cores, last-level cache. No measuring.
target detect_cpu_target();

// One core's level-2 cache in bytes (sysfs of cpu0; 0 when unknown). A working set that fits
// there is floored by the L2 ceiling (cpu_ceilings::l2_bytes_per_s), or by none where that is not
// measured.
uint64_t cpu_l2_bytes();

// Whether measure_cpu_ceilings measures an L2 ceiling here: sysfs names an L2 of 64 KiB or more
// (a quarter of it is the sweep's buffer; smaller reads are mostly loop overhead).
bool l2_ceiling_measurable();

// Measures memory bandwidth (best of copy and read sweeps; a buffer 4x the LLC, so DRAM) and
// in-cache bandwidth (half the
// LLC), and the fp32 FMA peak over all cores. Takes about a second; callers cache the result
// (store measurements) per device.
struct cpu_ceilings {
  double dram_bytes_per_s = 0;
  double llc_bytes_per_s = 0;
  // Every core copying and reading within its own L2 (a quarter of it, persistent threads, short
  // samples, each core's best), summed: 0 when sysfs names no L2.
  double l2_bytes_per_s = 0;
  double flops_per_s = 0;
  // CPU seconds of the threads the measurement started (not the caller's): what a load meter
  // around it counts as lathe's (load_meter::count_as_lathes), the rest of the process's threads
  // being other evaluations' load.
  double thread_cpu_s = 0;
};
// `threads`: how many threads measure (0: the CPUs in lathe's affinity mask, what a worker gets).
cpu_ceilings measure_cpu_ceilings(const target& t, uint32_t threads = 0);

// Whether this machine has an NVIDIA device node (/dev/nvidiactl): the one test every part of
// lathe uses before it tries to run a CUDA kernel.
bool has_cuda_device();

}  // namespace lathe::gate
