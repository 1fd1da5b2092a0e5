// What every verb needs: the workspace, the store, the toolchain and the target (with measured
// ceilings, cached in the store per device), and where lathe's own files are.
#pragma once

#include <filesystem>
#include <optional>
#include <string>

#include "core/error.h"
#include "core/kernel.h"
#include "core/target.h"
#include "core/task.h"
#include "gate/build.h"
#include "gate/gate.h"
#include "store/store.h"
#include "store/workspace.h"

namespace lathe::cli {

struct paths {
  std::filesystem::path exe_dir;      // where lathe and lathe-worker live
  std::filesystem::path include_dir;  // lathe/abi.h
  std::filesystem::path tasks_dir;    // the shipped tasks
  std::filesystem::path prompts_dir;  // the proposer's prompt templates (agent/prompt.h)
};
paths locate();

struct context {
  workspace ws;
  std::optional<store> db;
  gate::toolchain tools;
  target tgt;                 // the CPU
  std::optional<target> gpu;  // CUDA device 0, when there is one and lathe-probe-cuda read it
  std::string gpu_error;      // why `gpu` is absent on a machine with an NVIDIA device node
  paths where;
};

// Opens the workspace and store, detects the toolchain, the CPU target and, where there is an
// NVIDIA device, the GPU target; measures each target's ceilings once per device and caches
// them in the store (`refresh`: measure again and keep the higher of old and new).
result<context> open_context(const std::optional<std::filesystem::path>& workspace_dir,
                             bool measure_ceilings, bool refresh = false);

// The GPU target read by `probe` (properties every time: they are cheap and a driver update
// changes some), with its measured ceilings from the store, keyed by device name and UUID.
// Measures when there are none and `measure`, or when `refresh`.
// Where the machine has one GPU, the whole target is cached too, keyed by its UUID and the
// driver version (read from /proc, no CUDA context), so that the probe runs once per device.
// `identity` (single_gpu_identity(); empty: no whole-target cache).
result<target> cached_gpu_target(store& db, const std::filesystem::path& probe, bool measure,
                                 bool refresh, const std::string& identity);
// "<uuid>|<driver version line>" of the machine's only NVIDIA GPU, from /proc (no CUDA
// context); empty with none or several.
std::string single_gpu_identity();
// The same without the whole-target cache: the probe runs every time (properties), ceilings
// from the store.
result<target> cached_gpu_target_probed(store& db, const std::filesystem::path& probe,
                                        bool measure, bool refresh);

// How a verb asks the gate to measure (`lathe eval`'s options): one place, so that every verb that
// gates a kernel (eval, rules apply, later decompose and optimize) measures it the same way and
// its stored policy means the same thing.
struct gate_settings {
  bool time = true;         // false: stop after the correctness checks (--no-time)
  bool aa_control = true;   // the A/A control (--no-aa)
  uint32_t seeds = 3;       // correctness trials per shape set; at least 3
  double max_time = 3.0;    // longest paired series, seconds (--max-time)
  std::optional<double> target_rse;  // default: the platform's (below)
  uint64_t seed = 0;        // input seed base; 0: random per evaluation
  std::string mode = "decision";     // decision | kernelbench | do_bench
  uint32_t warmup = 3, trials = 100; // kernelbench mode
  bool host_trials = false;          // CUDA: inputs and references on the host
  bool refuse_torch_fallback = false;  // a ModelNew's calls of the reference's ops: forbidden
  bool progress = true;              // stage messages on stderr ("… compile")
  // --quick: 2 process pairs and 4 ABBA rounds per paired series (the policy's 4 and 6): about
  // half the timing cost of a slow kernel, wider intervals. The A/A margin grows with them, so
  // noise makes "faster" harder to show, never easier. The policy is stored with the evaluation.
  bool quick = false;
};

// The gate's configuration for one task in this context: the workspace cache, the toolchain, the
// task's target (the GPU for a CUDA task), the worker, and the settings.
gate::gate_config make_gate_config(const context& ctx, const task& t, const gate_settings& s);

// Stores a gated kernel and its evaluation (its PTX as a blob) in the context's store; sets and
// returns the evaluation's id.
result<int64_t> store_evaluation(context& ctx, const kernel_bundle& k, evaluation& e);

// A kernel argument: a bundle path (directory or bare file), or the name of one of the task's
// kernels (kernels/<name>).
result<kernel_bundle> find_task_kernel(const task& t, const std::string& arg);

// A task argument: a directory, a task.toml, or the name of a shipped task.
result<std::filesystem::path> find_task_path(const std::string& arg, const paths& where);

// find_task_path, then the task file read (spec/task_file.h): what every verb taking TASK does.
// A PyTorch problem file is imported on `problem_platform` (problem_platform_of a kernel).
result<task> find_task(const std::string& arg, const paths& where,
                       std::optional<platform> problem_platform = std::nullopt);
// The platform a kernel argument implies for a problem file: cuda for a .cu file or a directory
// holding one, else cpu.
platform problem_platform_of(const std::string& kernel_arg);

}  // namespace lathe::cli
