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

struct python_build_result {
  bool ok = false;
  std::string log;  // what the steps printed, the compilers' logs included (untrusted text)
  int extensions = 0;
  int compiled = 0;  // of which built now (the others came from the cache)
};

// In `dir` (the candidate's private build folder, holding kernel.py): writes model.json (the
// task's KernelBench Model, `model_spec`, when there is one), records the extensions the
// candidate builds (python/lathe_ext.py record, under `jail`), compiles each one not yet in
// `ext_root/<key>` (lathe_ext.py compile, in parallel) and writes extensions.json, the list the
// worker loads them from. `runtime` (the interpreter's torch and python versions) is part of
// every key.
python_build_result build_python_extensions(const std::filesystem::path& interpreter,
                                            const std::string& runtime, const std::string& model_spec,
                                            const std::filesystem::path& dir,
                                            const std::filesystem::path& ext_root, const tool_jail& jail);

}  // namespace lathe::gate
