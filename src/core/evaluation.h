// What one gate evaluation produced. Stored whole (store/), printed by cli/, serialized as
// lathe.eval/1 (docs/schemas.md).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "core/decision.h"
#include "core/outcome.h"
#include "core/provenance.h"
#include "core/target.h"

namespace lathe {

// Error of one output against the reference on one trial.
struct check_record {
  std::string shape_set;
  uint64_t seed = 0;
  std::string output;
  bool passed = false;
  double max_abs_err = 0.0;
  double max_rel_err = 0.0;
  double norm_err = 0.0;   // ||out - ref||_2 / ||ref||_2
  uint64_t mismatches = 0;
  std::vector<std::string> first_mismatches;  // "[12,3]: got 1.5, want 2.25"
};

// The timing policy is a value stored with the results it produced (STYLE.md).
struct timing_policy {
  double min_seconds = 0.3;        // per paired series, before the noise criterion may stop it
  double max_seconds = 3.0;
  double target_rse = 0.005;       // stop when the relative std error of the log ratio is below
  double block_seconds = 0.02;     // aim of one block of calls
  uint32_t min_rounds = 6;         // ABBA rounds before the noise criterion may stop
  double warmup_seconds = 0.05;
  double settle_seconds = 0.25;    // per process, at most, before calibration: its blocks run until
                                   // two in a row agree (gate/timing.h settle); every process of
                                   // every side, the A/A control's copies too, alike
  double aa_unstable = 0.20;       // an A/A interval reaching further than this from 1 marks the
                                   // evaluation unstable. DRAM-bound kernels in separate
                                   // processes read 5-15% apart on the 2-core VM, so 0.10 would
                                   // call every memory-bound evaluation there unstable
  bool starts_at_once = true;      // the timing workers started at once (Python ones import torch
                                   // for seconds); false: one after another, as CUDA's were before
                                   // 2026-12-07 (kept to measure the one against the other)
  uint32_t processes = 4;          // worker processes per side; rounds cycle through the pairs.
                                   // Each process has its own memory and a DRAM-bound kernel's
                                   // speed depends on it: identical kernels in two processes
                                   // read up to 13% apart here (axpy, 48 MB working set).
  double roofline_slack = 0.8;     // time below floor * slack is suspicious. The ceilings are
                                   // microbenchmarks, the best of every measurement kept (the
                                   // workspace's cache only ever raises them), so a kernel faster
                                   // than 125% of the floor measured something else. At 0.5 a
                                   // kernel that cut its work when called back to back passed at
                                   // 135% of the floor (issue 22)
};

// How a side's timing blocks were timed.
enum class timing_method : uint8_t {
  wall,    // CPU: lathe's clock
  events,  // CUDA launches: lathe's clock decides, the worker's events cross-check it
  graph,   // CUDA-graph replay of the block
};
const char* to_string(timing_method m);

// Where the inputs and references of the checks came from.
enum class trial_site : uint8_t {
  host,    // generated and computed by lathe on the CPU
  device,  // generated on the GPU, fp64 GPU reference in a trusted oracle process, compared there
           // (the GPU reference checked against the CPU one on the small set)
};
const char* to_string(trial_site s);

// PyTorch problems: how the checks' tensors travelled between the problem's worker and the kernel's.
enum class tensor_path : uint8_t {
  host,      // the shared-memory region, copied to and from the device by the kernel's worker
  cuda_ipc,  // the problem's worker wrote the inputs into the kernel's device memory and
             // compared its outputs there, every check
};
const char* to_string(tensor_path p);

// One series of paired timing: per round, seconds per call of A (candidate) and B (baseline).
struct paired_series {
  std::string a_label, b_label;
  std::vector<double> a_seconds, b_seconds;  // one per block, per call
  std::vector<uint8_t> a_first;              // 1 when A ran first in that round
  std::vector<uint8_t> pair;                 // which process pair ran the round
  double ratio = 0.0;                        // median-free: exp(mean log(b/a)) = speedup of A
  double ci_low = 0.0, ci_high = 0.0;        // 95% CI from between-round variance
  double rse = 0.0;                          // relative std error of the log ratio
  std::string stop_reason;                   // "noise" | "max_time" …
  // How each side's blocks were timed; none when no block was (stored as "").
  std::optional<timing_method> a_method, b_method;
};

// Comparability mode: another harness's timing protocol reproduced, so that a number can stand
// next to that harness's. Not paired, no A/A, no decision: the per-call times come from events
// in the candidate's own process, as they do there; lathe's clock bounds their sum.
struct comparability_result {
  std::string protocol;  // "kernelbench" (cuda_event) | "do_bench" (Triton)
  uint32_t warmup = 0, trials = 0;
  double mean_seconds = 0, std_seconds = 0, min_seconds = 0, max_seconds = 0;
  double median_seconds = 0, p20_seconds = 0, p80_seconds = 0;
  double host_seconds = 0;  // lathe's clock around the whole protocol
  // PyTorch problems: the eager problem timed live on the same device with the same protocol
  // (its own process), and mean eager / mean candidate, as KernelBench reports a speedup.
  std::optional<double> eager_mean_seconds, eager_median_seconds, speedup_vs_eager;
};

// What ptxas reported for one kernel function (CUDA builds, -Xptxas -v).
struct kernel_resources {
  std::string function;  // mangled name
  int32_t registers = 0;
  int64_t shared_bytes = 0;  // static shared memory
  int64_t stack_bytes = 0;
  int64_t spill_stores = 0, spill_loads = 0;
};

// The CPU slot an evaluation ran on (gate/cpu_slot.h): every worker of it pinned to `cores`. A
// time measured on one slot is compared with another slot's only through ratios, each measured
// on its own slot.
struct slot_record {
  uint32_t index = 0, count = 1;
  std::vector<uint32_t> cores;
};

struct evaluation {
  int64_t id = 0;  // store id, 0 before stored
  std::string task;
  std::string kernel_hash, kernel_name;
  std::string baseline_hash, baseline_name;
  target tgt;
  std::string toolchain;  // compiler version string
  timing_policy policy;
  provenance prov;
  outcome result = outcome::ok;
  std::string message;     // one line a user reads first
  std::string diagnostics; // compiler log, screen findings, worker stderr
  std::vector<check_record> checks;
  std::optional<double> median_seconds, baseline_median_seconds, dispersion;  // dispersion: MAD/median
  std::optional<paired_series> paired;  // candidate vs baseline
  std::optional<paired_series> aa;      // baseline vs a copy of itself
  std::optional<double> roofline_fraction;
  // The gate's decision on the paired ratio, one rule for every verb (gate/paired.h decide):
  // "faster" when the interval's low end clears 1 + epsilon, "slower" when its high end is below
  // 1 / (1 + epsilon), "same" between, "undecided" where the machine's noise leaves it open (the
  // outcome is then `unstable`). Empty when nothing was timed in decision mode.
  std::optional<lathe::decision> decision;
  std::optional<double> epsilon;
  std::string timing_shape;
  double wall_seconds = 0.0;
  std::vector<std::pair<std::string, double>> stage_seconds;  // screen, compile, load, check, time
  std::optional<comparability_result> comparability;
  // CUDA: the device's clocks, temperature, power and throttle reasons (NVML) right before and
  // right after the timing stage; absent where NVML is not.
  std::optional<gpu_snapshot> gpu_before, gpu_after;
  trial_site trials_on = trial_site::host;  // where the checks' inputs and references came from
  // PyTorch problems: the oracle's runtime ("torch 2.11.0 (cuda 13.0, python 3.12.3)").
  std::string reference_runtime;
  // PyTorch problems: how the checks' tensors travelled (tensor_path). None for other tasks.
  std::optional<tensor_path> problem_path;
  std::optional<slot_record> slot;  // none: the whole machine, unpinned (no --cpu-slots)
  std::vector<kernel_resources> resources;  // CUDA: ptxas resource report per kernel function
  std::string ptx;       // CUDA: the PTX of the build; stored as a blob, not in the JSON
  std::string ptx_blob;  // content hash of the stored PTX
};

}  // namespace lathe
