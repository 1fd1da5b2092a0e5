// Kernel bundles: a directory with kernel.toml, or a bare .cpp/.cu file (docs/tasks.md).
#pragma once

#include <filesystem>

#include "core/error.h"
#include "core/kernel.h"

namespace lathe {

result<kernel_bundle> load_bundle(const std::filesystem::path& path);

// The one-file bundle of `file` (a .cpp/.cc/.cu/.py) from its bytes, which the caller read (a
// KernelBench sample, read beneath its folder without following a link: safe_file.h). The same
// bundle, and hash, as load_bundle(file).
result<kernel_bundle> bare_bundle(const std::filesystem::path& file, std::string text);

// Content hash of the manifest and every file (independent of where the bundle was loaded).
std::string bundle_hash(const kernel_bundle& b);

// Writes the bundle (kernel.toml + sources) into `dir` (created), e.g. to materialize a stored
// kernel. Bare bundles are written with an explicit kernel.toml.
result<void> write_bundle(const kernel_bundle& b, const std::filesystem::path& dir);

// A warning for a C++ bundle whose sources hold `#pragma omp` while its flags enable no OpenMP
// (the pragmas are then ignored: one thread, no SIMD clauses); empty otherwise.
std::string openmp_warning(const kernel_bundle& b);

}  // namespace lathe
