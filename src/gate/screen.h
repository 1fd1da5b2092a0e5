// Static screening (PROTOCOL.md "screen"): the sources and flags before the build, the built
// object's symbols and linked libraries after it. A finding ends the evaluation as `forbidden`
// with the reason. Screening is a first line; the worker's sandbox is the second, because a
// determined kernel can hide a name from a text search.
#pragma once

#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

#include "core/kernel.h"
#include "core/task.h"

namespace lathe::gate {

struct finding {
  std::string what;   // "environment access", "vendor library"…
  std::string where;  // "kernel.cpp:12", "symbol getenv", "flag -fplugin=x.so"
  std::string detail;
};

enum class screen_role : uint8_t {
  candidate,  // held to the task's contract
  baseline,   // trusted to call vendor libraries (it is the library baseline)
};

std::vector<finding> screen_sources(const kernel_bundle& b, const task& t, screen_role role);
// `nm -D --undefined-only` and `readelf -d` (NEEDED) of the built object.
std::vector<finding> screen_object(const std::filesystem::path& object, const task& t,
                                   screen_role role);

// The PTX of a CUDA candidate: reads of the device's clocks (%globaltimer, %clock, %clock64),
// with which device code tells graph replays (back to back) from checked calls.
std::vector<finding> screen_ptx(const std::string& ptx);

// The files mapped into a candidate's worker while it ran (/proc/<pid>/maps): a vendor library
// the task forbids that the object never linked was opened at run time (a kernel that finds
// dlopen by itself). Paths only; reading them is the caller's (gate/cpu/worker.h).
std::vector<finding> screen_mappings(const std::vector<std::string>& mapped, const task& t);

// The undefined symbols of a ModelNew's built extension (`nm -D -C`) that compute around torch's
// dispatcher, where lathe's record of a candidate's torch ops (gate/cpu/op_record.h) cannot see
// them: torch's kernels called by namespace (at::cpu::gelu, at::native::linear, the composite
// ones) and BLAS called directly. An extension calling at::gelu goes through the dispatcher and
// is recorded; one calling at::cpu::gelu was `ok` under --refuse-torch-fallback. CUDA's
// at::cuda:: is not screened (its utilities and its kernels share the namespace). Demangled
// names; an unreadable object gives one entry saying so.
std::vector<std::string> dispatcher_bypass(const std::filesystem::path& object);

// A Python binding (a bundle's *.py: KernelBench's ModelNew, a ctypes wrapper), read with
// Python's ast by python/lathe_screen.py, never imported: try/except fallbacks, calls into
// PyTorch's compute (unless the task allows "torch"), precision below the task's. `name` is the
// file's path in the bundle. A binding that cannot be screened is a finding too.
std::vector<finding> screen_python_binding(const std::string& name, const std::string& text,
                                           const task& t, screen_role role);

std::string describe(const std::vector<finding>& f);  // one line per finding

}  // namespace lathe::gate
