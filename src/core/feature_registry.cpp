#include "core/feature_registry.h"

#include <algorithm>
#include <array>

namespace lathe {
namespace {

// One entry per name; feature_registry() hands them out sorted by name.
constexpr std::array<feature_definition, 23> registry{{
    {"block_reduce", "cuda", "",
     "a reduction across the threads of a block through shared memory (tree or two-level), "
     "instead of one thread or atomics per element"},
    {"cp_async_pipeline", "cuda", "stages",
     "global-to-shared copies issued with cp.async (or cp.async.bulk) into several stage buffers, "
     "so that the copy of the next tiles overlaps the compute of the current one"},
    {"fast_math", "cuda,cpu", "",
     "approximate math: fast intrinsics (__expf, __fdividef, rsqrtf…) or a fast-math compile "
     "flag (--use_fast_math, -ffast-math)"},
    {"launch_bounds", "cuda", "threads,min_blocks",
     "__launch_bounds__ on a kernel, bounding registers per thread for a block size"},
    {"ldmatrix", "cuda", "",
     "shared-to-register fragment loads with ldmatrix (optionally .trans) for tensor-core operands"},
    {"loop_unroll", "cuda,cpu", "factor",
     "a loop unrolled by pragma (#pragma unroll / GCC unroll) or by hand, with its factor"},
    {"mma_sync", "cuda", "shape",
     "warp-level tensor-core multiply-accumulate with mma.sync (or wmma), e.g. m16n8k16"},
    {"omp_parallel", "cpu", "schedule",
     "a loop distributed across threads with OpenMP (#pragma omp parallel for)"},
    {"online_softmax", "cuda,cpu", "",
     "the running maximum and running sum computed in one pass (rescaling the sum when the maximum "
     "changes) instead of separate max and sum passes"},
    {"radix_select", "cuda,cpu", "digit_bits",
     "the k-th largest key found digit by digit from histograms of the keys' bits (most significant "
     "digit first, each pass counting only keys that share the digits found so far), then the "
     "selection compacted against that threshold, instead of sorting"},
    {"read_only_load", "cuda", "",
     "global loads through the read-only path: __ldg or const __restrict__ pointers the compiler "
     "turns into ld.global.nc"},
    {"register_tiling", "cuda,cpu", "tile",
     "each thread (or each loop iteration) computes a tile of several outputs held in registers, "
     "reusing each loaded operand across the tile"},
    {"restrict", "cuda,cpu", "",
     "pointer parameters declared __restrict__ (no aliasing), letting the compiler reorder and "
     "cache loads"},
    {"simd", "cpu", "width",
     "explicit vector instructions for the innermost loop: intrinsics (_mm256_*), vector types, or "
     "#pragma omp simd"},
    {"smem_tiling", "cuda", "tile",
     "tiles of the inputs staged in shared memory by a block and reused by its threads"},
    {"tma", "cuda", "",
     "tensor memory accelerator copies (cp.async.bulk.tensor with a tensor map) between global and "
     "shared memory"},
    {"vector_access", "cuda,cpu", "width",
     "contiguous elements loaded or stored several at a time through wider types (float4, uint4, "
     "half2, 256-bit vectors), with the alignment that needs"},
    {"warp_reduce", "cuda", "",
     "a reduction across the lanes of a warp with shuffles (__shfl_xor_sync / __shfl_down_sync, "
     "or redux.sync)"},
    {"warp_specialization", "cuda", "",
     "warps of one block given different roles (producer warps copying, consumer warps "
     "computing), synchronized through barriers"},
    {"wgmma", "cuda", "shape",
     "warpgroup tensor-core multiply-accumulate with wgmma.mma_async (Hopper, sm_90a)"},
    {"prefetch", "cuda,cpu", "",
     "data requested ahead of its use by explicit prefetch instructions (__builtin_prefetch, "
     "_mm_prefetch; prefetch.global / cp.async.bulk.prefetch in PTX), so that it is in cache when "
     "the loop reaches it"},
    {"non_temporal_store", "cuda,cpu", "",
     "streaming stores that bypass or do not keep the written lines in cache (_mm*_stream_*, "
     "__builtin_nontemporal_store; __stcs / st.global.cs in CUDA), for outputs written once and "
     "not read back"},
    {"cache_blocking", "cpu", "tile",
     "loops tiled so that blocks of the operands stay in a CPU cache level while they are reused"},
}};

}  // namespace

std::span<const feature_definition> feature_registry() {
  static const auto sorted = [] {
    auto r = registry;
    std::sort(r.begin(), r.end(),
              [](const feature_definition& a, const feature_definition& b) { return a.name < b.name; });
    return r;
  }();
  return sorted;
}

const feature_definition* find_feature(std::string_view name) {
  const auto all = feature_registry();
  const auto it = std::lower_bound(all.begin(), all.end(), name,
                                   [](const feature_definition& d, std::string_view n) { return d.name < n; });
  return it != all.end() && it->name == name ? &*it : nullptr;
}

}  // namespace lathe
