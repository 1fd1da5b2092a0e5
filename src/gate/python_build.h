// The build of a Python candidate that is a KernelBench ModelNew (docs/python-kernels.md,
// "Extensions"): its load_inline extensions recorded in the build's jail and compiled, each in a
// jail of its own, into a cache keyed by the extension's content, before any kernel runs.
#pragma once

#include <filesystem>
#include <string>

#include "gate/process.h"

namespace lathe::gate {

// True when the source defines `class ModelNew` at its top level.
bool defines_model_new(const std::string& source);

// True when the source assigns `launch` at its top level (`def launch`, `launch = …`): the Python
// worker then calls it and never constructs a ModelNew (python/lathe_kernel.py).
bool defines_launch(const std::string& source);

// Whether a Python kernel is a ModelNew candidate of a problem, the only kind whose build runs
// the record step (and whose screen allows torch): the task has a KernelBench Model
// (`problem_model`, task::problem_model) and the source defines `class ModelNew` and no
// `launch`. The record step runs the candidate's own code at build time: one unused
// `class ModelNew` line switched it on for any Python kernel on any task (issue 42).
bool model_new_candidate(const std::string& source, const std::string& problem_model);

// Whether a Python kernel's source asks for the GPU: inline CUDA (`cuda_sources=`), Triton (`import
// triton`, `from triton`), or torch's device (`.cuda(`, `device="cuda"`, `torch.cuda.`). `lathe eval
// PROBLEM.py KERNEL.py` imports a bare problem on CUDA for such a kernel (cli problem_platform_of);
// a task.toml's `platform` decides otherwise.
bool names_cuda(const std::string& source);

// Whether a file of a built extension's output folder is one the worker loads: the module
// (`*.so`) and its record (`lathe-ext.json`), at the folder's top (`rel` relative to it). The rest
// (objects, ninja's files) is large and left behind.
bool extension_output(const std::filesystem::path& rel);

// torch's TORCH_CUDA_ARCH_LIST entry for a CUDA architecture ("sm_90a" -> "9.0a", "sm_86" ->
// "8.6"); empty for anything else (a CPU target's ISA). A ModelNew's inline CUDA is compiled in a
// sandbox without the device, where torch would look for one to choose the architecture (and
// torch 2's cpp_extension fails on an empty list): lathe names the task's target instead.
std::string torch_cuda_arch(const std::string& isa);

struct python_build_result {
  bool ok = false;
  std::string log;  // what the steps printed, the compilers' logs included (untrusted text)
  int extensions = 0;
  int compiled = 0;  // of which built now (the others came from the cache)
  std::string refused;  // the candidate was caught at what the gate refuses (build_output::refused)
};

// Records the extensions the candidate `source` builds (python/lathe_ext.py record, under `jail`,
// in a scratch folder of its own holding a copy of the source: the build folder's kernel.py,
// which the worker runs, is out of its reach, and a record step that rewrites its copy is
// refused), compiles each one not yet in `ext_root/<key>` (lathe_ext.py compile, in parallel),
// and writes model.json (the task's KernelBench Model, `model_spec`) and extensions.json (the
// list the worker loads them from) into `dir`, the candidate's build folder. Every file in a
// folder a candidate's code ran in is read and copied without following links (safe_file.h).
// `runtime` (the interpreter's torch and python versions) is part of every key, and so is
// `cuda_arch` (torch_cuda_arch of the target; empty on CPU tasks), which the compile is given.
python_build_result build_python_extensions(const std::filesystem::path& interpreter,
                                            const std::string& runtime, const std::string& model_spec,
                                            const std::string& source, const std::filesystem::path& dir,
                                            const std::filesystem::path& ext_root, const tool_jail& jail,
                                            const std::string& cuda_arch = {});

}  // namespace lathe::gate
