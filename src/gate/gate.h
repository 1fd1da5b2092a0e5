// The gate: screen -> compile -> load -> check (small shape first, then all) -> time.
// One evaluation, one closed outcome (PROTOCOL.md). The candidate and the baseline run in
// their own worker processes; the reference and every verdict stay in this (trusted) process.
#pragma once

#include <cstdint>
#include <filesystem>
#include <functional>
#include <optional>
#include <string>

#include "core/evaluation.h"
#include "core/kernel.h"
#include "core/target.h"
#include "core/task.h"
#include "gate/build.h"
#include "gate/cpu_slot.h"
#include "gate/cpu/worker.h"
#include "gate/screen.h"

namespace lathe::gate {

// Decision mode is lathe's own protocol (PROTOCOL.md "Timing"): paired, randomized, A/A
// controlled, all shape sets checked. The comparability modes reproduce another harness's work
// on the timed shape only, for numbers that can stand next to that harness's (no decision).
enum class timing_mode : uint8_t { decision, kernelbench, do_bench };
const char* to_string(timing_mode m);  // `lathe eval --mode`'s words

struct gate_config {
  std::filesystem::path cache_dir;  // workspace cache
  toolchain tools;
  target tgt;                       // with measured ceilings when known
  timing_policy policy;
  sandbox_options sandbox;
  uint32_t seeds = 3;               // correctness trials per shape set (>= 3)
  uint64_t seed_base = 0;           // 0: a fresh random base per evaluation
  bool time = true;                 // false: stop after the checks
  bool aa_control = true;           // run the A/A control (baseline vs a copy of itself)
  timing_mode mode = timing_mode::decision;
  uint32_t bench_warmup = 3;        // comparability: warm-up calls (kernelbench)
  uint32_t bench_trials = 100;      // comparability: timed calls (kernelbench)
  bool device_trials = true;        // CUDA tasks with a gpu_reference: trials on the device
  double call_timeout_s = 20;       // watchdog for one call during checks
  // CPU: a kernel below the roofline floor twice has the ceilings measured again before it is
  // refused (time_cpu.cpp). Off only in tests that set ceilings on purpose.
  bool remeasure_ceilings = true;
  // A ModelNew's calls of the reference's own torch ops (KernelBench's "torch fallback",
  // python/lathe_screen.py): refused (forbidden) when set, else reported in the diagnostics.
  bool refuse_torch_fallback = false;
  // The CPU slot the evaluation runs on (gate/cpu_slot.h), its lock held by the caller for the
  // whole evaluation: every worker (candidate, baseline, the A/A copies) is pinned to its cores
  // with as many threads. None: the whole machine, unpinned.
  std::optional<cpu_slot> slot;
  std::function<void(const std::string&)> progress;  // stage messages (cli prints them)
};

struct gate_request {
  const task* t = nullptr;
  kernel_bundle candidate;
  kernel_bundle baseline;
  provenance prov;
  // `baseline` when the candidate is the task's own named baseline, checked like any kernel
  // but allowed the vendor library it exists to represent.
  screen_role role = screen_role::candidate;
};

// Never throws for anything the candidate does; lathe-side failures (cannot create a temp
// file) become an evaluation with a message too, so the caller can always store it.
evaluation evaluate(const gate_config& cfg, const gate_request& req);

}  // namespace lathe::gate
