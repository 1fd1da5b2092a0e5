// A kernel: one immutable version of an implementation, a bundle of a manifest and sources,
// identified by the content hash of both (DESIGN.md contracts).
#pragma once

#include <cstdint>
#include <filesystem>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace lathe {

// python: a Python file defining launch(inputs, outputs, scalars) on torch tensors, run by
// python/lathe_kernel.py (docs/python-kernels.md); CPU tasks.
enum class language : uint8_t { cpp, cuda, python };

// A tunable (DESIGN.md): a named parameter of a bundle (`[tune]` in kernel.toml, docs/tune.md),
// passed to the compiler as -DNAME=value. A configuration gives every tunable one of its values;
// the configured bundle is a bundle like any other (its defines set), content-hashed.
struct tunable {
  std::string name;             // a macro name
  std::vector<int64_t> values;  // as declared, distinct
};
using tune_config = std::map<std::string, int64_t>;

struct tune_space {
  std::vector<tunable> params;           // sorted by name
  // Conditions (core/expr.h eval_condition) over the tunables, the task's shape symbols and the
  // target's limits (spec/tune.h): a configuration must satisfy each on every shape set.
  std::vector<std::string> constraints;
  tune_config defaults;                  // every tunable: declared, else its define, else its first value
  bool empty() const { return params.empty(); }
};

struct kernel_manifest {
  language lang = language::cpp;
  std::string entry;                           // entry source file, relative to the bundle
  std::vector<std::string> files;              // every file of the bundle, entry included
  std::vector<std::string> flags;              // extra compiler flags ("-O3", "-fopenmp")
  std::map<std::string, std::string> defines;  // -DKEY=VALUE
  std::vector<std::string> libraries;          // -lNAME (vendor libraries: screened)
  std::string isa;                             // required target ISA ("x86-64-v3", "sm_90a");
                                               // empty = the host's resolved level
  tune_space tune;                             // empty: nothing to tune
};

struct kernel_bundle {
  std::string name;                            // directory or file stem, for display
  std::filesystem::path origin;                // where it was loaded from (not hashed)
  kernel_manifest manifest;
  std::map<std::string, std::string> sources;  // relative path -> contents
  std::string hash;                            // content hash of manifest + sources (hex)
  bool bare = false;                           // loaded from a single file
};

const char* to_string(language l);

}  // namespace lathe
