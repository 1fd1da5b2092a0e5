// A feature (DESIGN.md): a mechanism present in a kernel, `{locus, name}`, and how its detection
// was made. Lineages (core/lineage.h), cards (core/card.h) and runs (core/run.h) have their own
// headers, so that editing one of them rebuilds only what uses it.
#pragma once

#include <cstdint>
#include <map>
#include <string>

namespace lathe {

// How a detection was made.
enum class detection_method : uint8_t { source, ptx, sass, disassembly, proposer_audit };

struct feature {
  std::string locus;  // "function" or "function/loop-path" ("gemm_kernel/k")
  std::string name;   // from the feature registry ("smem_tiling", "simd"…)
  std::map<std::string, std::string> params;  // width, stages…
  detection_method method = detection_method::source;
};

const char* to_string(detection_method m);

}  // namespace lathe
