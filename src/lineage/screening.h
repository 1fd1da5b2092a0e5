// Link-level screening of an expert's built object (lathe init, issue 6): an expert that hands
// the work to a vendor library (cuBLAS, cuBLASLt, cuDNN, OpenBLAS, a reference BLAS, MKL, torch)
// is not an expert kernel, and a lineage walked back from it would be a lineage of a library
// call. The gate's own screen (gate/screen.h) refuses such a candidate too; this one keeps every
// finding with where it was seen, allowed ones included, so that the expert check says exactly
// what the object links and imports.
#pragma once

#include <filesystem>
#include <string>
#include <vector>

#include "core/expert.h"
#include "core/task.h"

namespace lathe::lineages {

struct screening {
  std::vector<delegation_finding> findings;  // allowed ones included (`allowed` true)
  std::vector<std::string> notes;            // a tool that could not run, in words
  bool complete = true;                      // every tool ran: nothing is unknown
  // Whether the object delegates to a library the task does not allow, or could not be screened
  // (a screen that could not look has not shown the object clean).
  bool refused() const;
  std::string describe() const;  // the refusing findings and notes, one line
};

// `nm -D --undefined-only` (imported symbols), `nm -C` (symbols defined in the object: a library
// linked statically shows its own names there) and `ldd` (shared libraries it loads, transitively)
// of `object`, each through gate::run_tool. A finding is allowed when the task lists its library
// in `allow_libraries` (core/task.h; spec/task_file.cpp reads it from task.toml).
screening screen_delegation(const std::filesystem::path& object, const task& t);

// The library a symbol or a shared object name betrays ("openblas", "cublas", "torch"…), or
// empty. Symbols are matched as nm prints them (mangled for -D, demangled for -C).
std::string library_of_symbol(const std::string& symbol);
std::string library_of_soname(const std::string& soname);

}  // namespace lathe::lineages
