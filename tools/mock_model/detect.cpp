#include "detect.h"

#include <regex>

#include "core/feature_registry.h"
#include "source.h"

namespace lathe::mock {
namespace {

struct pattern {
  const char* feature;
  const char* regex;  // searched in each code line
};

// Deliberately plain: a name's mechanism as it is spelled in source. Where the definition needs
// more than a spelling (tiling, online softmax, roles of warps), the pattern is the idiom the
// shipped kernels and the mock's own edits use; an audit by the mock shows that the audit
// machinery works, not that the mock understands kernels.
const pattern patterns[] = {
    {"block_reduce", R"(__syncthreads\s*\(\s*\).*\+=|\bsh\w*\s*\[\s*\w+\s*\]\s*\+?=)"},
    {"cache_blocking", R"(\bfor\s*\(.*;\s*\w+\s*\+=\s*[A-Z][A-Z0-9_]+\s*\))"},
    {"cp_async_pipeline", R"(cp\.async|__pipeline_memcpy_async|memcpy_async|cp_async)"},
    {"fast_math", R"(\b(__expf|__logf|__sinf|__cosf|__powf|__exp10f|__fdividef|rsqrtf)\s*\()"},
    {"launch_bounds", R"(\b__launch_bounds__\s*\()"},
    {"ldmatrix", R"(ldmatrix)"},
    {"loop_unroll", R"(^\s*#\s*pragma\s+(unroll|GCC\s+unroll)\b)"},
    {"mma_sync", R"(mma\.sync|\bwmma::|\bmma_sync\b)"},
    {"omp_parallel", R"(^\s*#\s*pragma\s+omp\s+parallel\b)"},
    {"online_softmax", R"(\w+\s*=\s*\w+\s*\*\s*(__)?expf?\s*\(\s*\w+\s*-\s*\w+\s*\)\s*\+)"},
    {"read_only_load", R"(\b__ldg\s*\()"},
    {"register_tiling",
     R"(\b(float|__m256|float4)\s+\w+\s*\[\s*\w+\s*\]\s*\[\s*\w+\s*\]|\b__m256\s+c\d\d\b)"},
    {"restrict", R"(\b(__restrict__|__restrict)\b)"},
    {"simd", R"(^\s*#\s*pragma\s+omp\s+simd\b|\b_mm(256|512)?_\w+\s*\()"},
    {"smem_tiling", R"(__shared__\s+[\w:]+\s+\w+\s*\[[^\]]+\]\s*\[)"},
    {"tma", R"(cp\.async\.bulk\.tensor|CUtensorMap|cuTensorMapEncode)"},
    {"vector_access", R"(\b(float4|float2|int4|uint4|half2|__half2|__m256|__m128)\b)"},
    {"warp_reduce", R"(__shfl_(xor|down|up)?_?sync\s*\(|\bredux\.sync)"},
    {"warp_specialization", R"(\b(producer|consumer)_?warp|setmaxnreg)"},
    {"wgmma", R"(wgmma)"},
};

const pattern* find_pattern(std::string_view feature) {
  for (const auto& p : patterns)
    if (feature == p.feature) return &p;
  return nullptr;
}

}  // namespace

std::vector<hit> detect(const mock_bundle& b, std::string_view feature) {
  std::vector<hit> out;
  const pattern* p = find_pattern(feature);
  if (!p) return out;
  const std::regex re(p->regex);
  for (const auto& [path, text] : b.files) {
    const source_view v(text);
    const auto fns = functions(v);
    for (size_t l = 0; l < v.line_count(); ++l) {
      const std::string line(v.code_line(l));
      if (!std::regex_search(line, re)) continue;
      hit h{path, l + 1, ""};
      const size_t at = v.line_start(l);
      for (const auto& f : fns)
        if (at >= f.head && at <= f.body_close) h.function = f.name;
      out.push_back(std::move(h));
    }
  }
  return out;
}

std::vector<std::string> present_features(const mock_bundle& b) {
  std::vector<std::string> out;
  for (const auto& d : feature_registry())
    if (!detect(b, d.name).empty()) out.emplace_back(d.name);
  return out;
}

}  // namespace lathe::mock
