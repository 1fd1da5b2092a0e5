// Python kernels (docs/python-kernels.md): a kernel that is a Python file defining
// launch(inputs, outputs, scalars) on torch tensors, run by python/lathe_kernel.py, a worker that
// speaks lathe-worker's protocol (gate/cpu/wire.h) under the same sandbox. Here: where its
// interpreter, its script and its confinement library are.
#pragma once

#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include "core/error.h"
#include "core/kernel.h"
#include "core/task.h"
#include "gate/cpu/worker.h"

namespace lathe::gate {

// Why a kernel written in `lang` cannot run on a task of platform `p` (empty when it can): a C++
// kernel runs on CPU tasks, a CUDA one on CUDA tasks, a Python kernel (torch tensors, a ModelNew)
// on either: on a CUDA task its worker holds the slots on the device (python/lathe_cuda.py).
std::string language_misfit(language lang, platform p);

struct python_kernel_runtime {
  std::filesystem::path interpreter;  // a python3 that imports torch
  std::string version;                // "torch 1.13.0a0 (python 3.11.2)"
  // The folder torch's package sits in, resolved (a venv's site-packages, or one a .pth or a
  // link leads to): the build's jail reads it as the worker's Landlock does (interpreter_trees).
  std::filesystem::path torch_root;
};

// The first of python_interpreters() (spec/problem.h) that imports torch; looked for once per process. An error
// says what was tried and what to install.
result<python_kernel_runtime> find_python_kernel_runtime();

// The worker's script: $LATHE_KERNEL_WORKER, else share/lathe/python/lathe_kernel.py beside the
// installed binary, else the source tree's python/lathe_kernel.py.
std::filesystem::path python_kernel_script();

// What a ModelNew's build left beside its kernel.py (model.json, extensions.json and the built
// extensions' folders), copied into a folder of its own that the worker's user may read: the
// build cache is lathe's, private to it. Removed with the last owner.
struct python_stage {
  std::filesystem::path dir;  // empty: nothing to stage (a launch() kernel)
  python_stage() = default;
  python_stage(const python_stage&) = delete;
  python_stage& operator=(const python_stage&) = delete;
  ~python_stage();
};
result<std::shared_ptr<python_stage>> stage_python_build(const std::filesystem::path& object);
// What the staged extensions call around torch's dispatcher (screen.h dispatcher_bypass), one
// entry per symbol ("ext0: at::cpu::gelu"): read from the stage's copies, which only lathe wrote.
std::vector<std::string> staged_dispatcher_bypass(const python_stage& stage);

// `opt` changed to start the Python worker instead of lathe-worker: the interpreter as the
// executable, the script and liblathe-confine.so (beside lathe-worker) as its arguments, and
// the staged files of a ModelNew (`stage`, possibly empty). `p`: the task's platform; on CUDA the
// worker is told `--device cuda` and holds its slots on the GPU.
result<sandbox_options> python_worker_options(sandbox_options opt, const python_stage& stage,
                                              platform p = platform::cpu);

// `opt` with the candidate's torch policy judged by lathe from the worker's op record
// (gate/cpu/op_record.h): the plumbing list beside the worker's script, the reference's compute
// ops from the staged model.json (fallback), and --torch-compute and --op-record for the worker.
result<sandbox_options> with_torch_policy(sandbox_options opt, torch_compute mode, const python_stage& stage);

}  // namespace lathe::gate
