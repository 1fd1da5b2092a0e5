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
#include "gate/settings.h"
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

// How a verb asks the gate to measure: the gate's own settings (gate/settings.h), which the verbs'
// options are bound to.
using gate::gate_settings;

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
// holding one, or a .py kernel that asks for the GPU (gate/python_build.h names_cuda), else cpu.
platform problem_platform_of(const std::string& kernel_arg);
// A verb's --platform word (add_platform_option, cli/enum_option.h) as find_task's
// problem_platform: "" (not given) is nothing, the verb's default; else `cpu` or `cuda`.
std::optional<platform> problem_platform_word(const std::string& word);
// The word when given, else what `kernel_arg` implies when there is one (problem_platform_of),
// else nothing (cpu): the problem platform of a verb with --platform and a start kernel.
std::optional<platform> problem_platform_for(const std::string& word, const std::string& kernel_arg);

}  // namespace lathe::cli
