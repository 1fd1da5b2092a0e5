#include "features/detect.h"

#include <algorithm>
#include <set>

#include "core/feature_registry.h"

namespace lathe::agent::rules {

const detection* detections::find(std::string_view name) const {
  for (const auto& d : found)
    if (d.what.name == name) return &d;
  return nullptr;
}

std::vector<std::string> detections::names() const {
  std::set<std::string> s;
  for (const auto& d : found) s.insert(d.what.name);
  return {s.begin(), s.end()};
}

bool has_detector(std::string_view name) {
  // docs/rules.md "Detectors", known limits: these four have no heuristic yet.
  static const std::set<std::string_view> none = {"block_reduce", "online_softmax",
                                                   "warp_specialization", "cache_blocking"};
  return find_feature(name) && !none.count(name);
}

bool artifact_visible(std::string_view name, language lang) {
  // What detect_ptx / detect_disassembly look for. Everything else (pragmas, __restrict__,
  // register tiles, CPU vector loads, CPU fast math) is read from the source.
  static const std::set<std::string_view> ptx = {
      "mma_sync",    "wgmma",       "cp_async_pipeline", "tma",
      "ldmatrix",    "warp_reduce", "vector_access",     "read_only_load",
      "smem_tiling", "fast_math",   "launch_bounds"};
  static const std::set<std::string_view> disassembly = {"simd", "omp_parallel"};
  return lang == language::cuda ? ptx.count(name) > 0 : disassembly.count(name) > 0;
}

detections detect_features(const kernel_bundle& b, const artifact& a) {
  detections out;
  const language lang = b.manifest.lang;
  bool examined = false;
  std::vector<detection> seen;
  if (lang == language::cuda) {
    if (a.ptx.empty()) {
      out.notes.push_back("not detected on the artifact: no PTX (the kernel was not built)");
    } else {
      seen = detect_ptx(a.ptx);
      examined = true;
    }
  } else {
    std::string text = a.disassembly;
    if (text.empty()) {
      if (a.object.empty()) {
        out.notes.push_back("not detected on the artifact: no object (the kernel was not built)");
      } else {
        disassembly_result d = disassemble(a.object);
        if (d.ok)
          text = std::move(d.text);
        else
          out.notes.push_back("not detected on the artifact: " + d.text);
      }
    }
    if (!text.empty()) {
      seen = detect_disassembly(text);
      examined = true;
    }
  }

  const std::vector<detection> source = detect_source(b);
  const auto source_has = [&](std::string_view name) {
    return std::any_of(source.begin(), source.end(),
                       [&](const detection& d) { return d.what.name == name; });
  };
  // A vector loop nobody asked for is still a vector loop; say where it came from.
  for (auto& d : seen)
    if (d.what.name == "simd" && !source_has("simd"))
      d.evidence +=
          "; the source has no vector intrinsics, vector types or omp simd: the "
          "compiler vectorized on its own";
  out.found = std::move(seen);

  std::set<std::string> disagreed;
  for (const auto& s : source) {
    if (examined && artifact_visible(s.what.name, lang)) {
      // The artifact is what runs: a source that asks for a mechanism the compiler did not
      // produce does not hold it. Said once per name, so a reader sees the disagreement.
      if (!out.has(s.what.name) && disagreed.insert(s.what.name).second)
        out.notes.push_back(s.what.name + ": the source suggests it (" + s.evidence +
                            ") but the artifact shows none");
      continue;
    }
    out.found.push_back(s);
  }
  return out;
}

}  // namespace lathe::agent::rules
