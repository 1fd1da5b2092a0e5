// Building kernels into shared objects through the content-hashed build cache.
#pragma once

#include <filesystem>
#include <string>
#include <vector>

#include "core/error.h"
#include "core/evaluation.h"
#include "core/kernel.h"
#include "core/target.h"
#include "core/task.h"

namespace lathe::gate {

struct toolchain {
  std::string cxx = "g++";
  std::string cxx_version;   // first line of `g++ --version`
  std::string nvcc;          // empty when absent
  std::string nvcc_version;
  std::filesystem::path include_dir;  // lathe's public headers (lathe/abi.h)
  std::filesystem::path dlpack_include;  // where dlpack/dlpack.h is, when not a system path
};
result<toolchain> detect_toolchain(const std::filesystem::path& include_dir);

struct build_output {
  bool ok = false;
  std::filesystem::path object;  // the .so in the cache
  std::string key;               // cache key
  std::string log;               // compiler output (the command line first)
  std::string object_hash;       // content hash of the .so, recorded at build time
  double seconds = 0;            // compile time (0 when cached)
  bool cached = false;
  std::string ptx;                            // CUDA: the PTX of every source, concatenated
  std::vector<kernel_resources> resources;    // CUDA: parsed from ptxas -v in the log
  // Set (with ok false) when the build caught the candidate at what the gate refuses rather
  // than a failed compile: a record step that rewrote kernel.py (what runs would not be what was
  // screened), a link planted where lathe reads or copies its build's files. The gate's outcome
  // is then `forbidden` with this reason.
  std::string refused;
};

// The ptxas resource report (`-Xptxas -v` output) of a CUDA build log, per kernel function.
std::vector<kernel_resources> parse_ptxas_report(const std::string& log);

enum class build_kind : uint8_t {
  kernel,     // a candidate or a baseline: lathe_launch
  reference,  // a trusted task reference: lathe_reference, -O2
};

// Builds `b` for `isa` (resolved level, e.g. "x86-64-v3"), or returns the cached artifact.
// The key covers the bundle hash, the toolchain, the ISA, the ABI version and the kind.
// Concurrent lathe processes may build the same key: each builds in a private directory and
// the first rename wins. A cached object whose hash no longer matches is rebuilt: something
// wrote over it. A Python ModelNew is built against `python_model` (task::problem_model): its
// extensions are compiled here (python_build.h), never on the timed path.
result<build_output> build(const kernel_bundle& b, const std::string& isa, const toolchain& tc,
                           const std::filesystem::path& cache_dir, build_kind kind,
                           const std::string& python_model = {});

// The ISA a bundle is built for: its manifest's, else the host's level for C++ and the reference
// machine's (an H200: sm_90a) for CUDA. The gate and the profile stage resolve alike, so both
// find one object in the cache.
std::string resolved_isa(const kernel_bundle& b, const target& host);

// A task's trusted reference as a bundle (`file`: task.reference, or task.gpu_reference with
// language::cuda), hashed by its name and source, for build(…, build_kind::reference).
kernel_bundle reference_bundle(const task& t, const std::filesystem::path& file, language lang);

// The compiler command for `b` (without the source paths' directory), for display and tests.
std::vector<std::string> compile_command(const kernel_bundle& b, const std::string& isa,
                                         const toolchain& tc, build_kind kind,
                                         const std::filesystem::path& src_dir,
                                         const std::filesystem::path& out);

}  // namespace lathe::gate
