// Feature detectors (issue 5): which registered features (core/feature_registry.h) a kernel
// holds, found on the compiled artifact first (PTX for CUDA, the disassembled .so for C++) and on
// the source second. The artifact is what runs: a `#pragma unroll` the compiler ignored or a
// `float4` it split shows there as absent, and a vector loop the compiler made without being asked
// shows as present. Source detection covers what an artifact cannot show (pragmas, __restrict__,
// register tiles) and stands in when no artifact was examined. Every detection says how it was
// made (feature::method) and carries its evidence; docs/rules.md "Detectors" lists the heuristics.
#pragma once

#include <filesystem>
#include <string>
#include <string_view>
#include <vector>

#include "core/feature.h"
#include "core/kernel.h"

namespace lathe::agent::rules {

// What a build gives (gate/build.h, build_output): the PTX of a CUDA build, the .so of a C++ one.
struct artifact {
  std::string ptx;               // CUDA: build_output.ptx; empty when there is none
  std::filesystem::path object;  // C++: the kernel .so, disassembled with objdump
  std::string disassembly;       // C++: `objdump -d -C --no-show-raw-insn` text already at hand
                                 // (used instead of running objdump on `object`)
};

struct detection {
  feature what;          // registered name, locus, params, method
  std::string evidence;  // "ptx:123: mma.sync.aligned.m16n8k16… (64 in this function)"
};

struct detections {
  std::vector<detection> found;
  // What could not be examined or disagreed, in words: "not detected on the artifact: objdump
  // missing", "simd: the source asks for it (kernel.cpp:12) but the artifact shows none".
  std::vector<std::string> notes;

  bool has(std::string_view name) const { return find(name) != nullptr; }
  // The first detection of `name` (artifact detections come first); nullptr when absent.
  const detection* find(std::string_view name) const;
  // Every detected name once, sorted.
  std::vector<std::string> names() const;
};

// The features of `b`: the artifact's detections (PTX for CUDA, disassembly for C++), then the
// source's for features the artifact cannot show, and for every feature when the artifact could
// not be examined (no PTX, objdump missing or failing). Never throws.
detections detect_features(const kernel_bundle& b, const artifact& a);

// The building blocks, public for tests and for callers that hold only one of the inputs.
// Detections are one per (name, locus), in order of first evidence.
std::vector<detection> detect_ptx(std::string_view ptx);
std::vector<detection> detect_disassembly(std::string_view objdump_text);
std::vector<detection> detect_source(const kernel_bundle& b);

// `objdump -d -C --no-show-raw-insn` of `object`, objdump found on PATH. On failure: the reason
// ("objdump missing", or objdump's own message).
struct disassembly_result {
  bool ok = false;
  std::string text;  // the disassembly, or why there is none
};
disassembly_result disassemble(const std::filesystem::path& object);

// Whether a name can be seen on the artifact of a platform: such names are taken from the
// artifact alone when it was examined, since a source that asks for a mechanism the compiler did
// not produce does not hold it.
bool artifact_visible(std::string_view name, language lang);

// Registry names no detector covers (docs/rules.md "Detectors", known limits): an audit of one
// of these is `unknown`, so it fails, rather than a guessed `absent`.
bool has_detector(std::string_view feature_name);

// The function name of a PTX `.entry`/`.func` symbol or of a demangled C++ signature:
// "_ZN…10gemm_naiveEPK13__nv_bfloat16S2_Pfiii" → "gemm_naive", "(anonymous namespace)::
// micro_6x16(long, float const*)" → "micro_6x16". Unmangled names come back as they are.
std::string short_function_name(std::string_view symbol);

}  // namespace lathe::agent::rules
