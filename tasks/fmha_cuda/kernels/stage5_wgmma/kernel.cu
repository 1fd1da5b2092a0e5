// Stage 5 FMHA forward (Hopper): O = softmax(Q Kᵀ · scale [+ causal mask]) V, bf16 [B, H, S, 128].
//
// The expert with its tensor-core instruction replaced: mma.sync (one warp, 16 x 8 x 16, both
// operands in registers through ldmatrix) becomes wgmma.mma_async (a warpgroup of 4 warps,
// 64 x 128 x 16, issued asynchronously: fence, issue, commit a group, wait for it).
//  - a block owns BQ = 128 query rows of one (b, h): two warpgroups (256 threads), each 64 rows.
//    Key tiles are BKV = 128 rows of K and V, double-buffered in shared memory and copied by
//    cp.async.cg while the previous tile is computed (the expert's pipeline, unchanged);
//  - S = Q Kᵀ (64 x 128 per warpgroup, 64 fp32 accumulators per thread): both operands from
//    shared memory through matrix descriptors. Q and K are both "K-major" (d contiguous), the
//    instruction's default (trans-b = 0);
//  - the expert's base-2 online softmax on the accumulator fragment (warp w of the warpgroup owns
//    rows 16 w + g and 16 w + g + 8, g = lane / 4; s[4 n .. 4 n + 3] are (row g, keys 8 n + 2 t,
//    +1) and (row g + 8, the same keys), t = lane % 4), row maxima and sums over the 4 threads of
//    a row by two xor shuffles;
//  - O += P V with P from registers: the accumulators of key columns 16 k .. 16 k + 15, rounded to
//    bf16 pairs, are the register A fragment of k16 step k (the mma.sync m16n8k16 A layout per
//    warp), and V (key-major, d contiguous: "MN-major" for the instruction) is read through a
//    descriptor with trans-b = 1. O stays in 64 fp32 accumulators per thread.
// Shared layouts are the 128B-swizzled canonical ones wgmma reads: a [rows, 128] bf16 tile is two
// panels of 64 columns (128 bytes per row); the 16-byte chunk c of a panel's row r is stored at
// chunk c ^ (r % 8); panel and tile bases are 1024-byte aligned.
//   Q and K (K-major): descriptor SBO = 1024 (the next 8 rows), LBO unused; the k16 step d0 is
//   panel d0 / 64, plus 32 bytes per 16 columns inside it.
//   V (MN-major, trans-b = 1): LBO = one panel (the next 64 columns of d), SBO = 1024 (the next
//   8 keys); the k16 step over keys adds 16 rows = 2048 bytes.
// cp.async writes are generic-proxy writes and wgmma reads through the async proxy, so each
// thread fences (fence.proxy.async.shared::cta) after its copies land, before the barrier.
// Every wgmma group is waited for (wait_group 0) before its results are read, and the barrier at
// the end of an iteration also proves the tile's buffers free for the copy of tile j + 2.
// Per-warpgroup skipping: a warpgroup whose 64 rows are all past S, or all before every key of a
// tile (causal), skips that tile's math but still takes part in the copies and barriers.
#include <cuda_bf16.h>
#include <cuda_runtime.h>
#include <lathe/abi.h>
#include <math.h>
#include <stddef.h>
#include <stdint.h>

namespace {

constexpr int D = 128;                 // head dimension: the task's contract
constexpr int BQ = 128;                // query rows per block
constexpr int BKV = 128;               // keys per tile
constexpr int THREADS = 256;           // two warpgroups of 64 rows
constexpr int ROW_CHUNKS = D / 8;      // 16-byte chunks per row: 16, two panels of 8
constexpr int NS = BKV / 8;            // n8 column groups of S: 16
constexpr int NO = D / 8;              // and of O: 16
constexpr int Q_PANEL = BQ * 128;      // bytes of one 64-column panel of the Q tile: 16 KiB
constexpr int KV_PANEL = BKV * 128;    // of a K or V tile: 16 KiB
constexpr int Q_BYTES = 2 * Q_PANEL;
constexpr int KV_BYTES = 2 * KV_PANEL;
constexpr size_t SMEM_BYTES = size_t(Q_BYTES) + 4 * size_t(KV_BYTES) + 1024;  // Q K0 V0 K1 V1
static_assert(SMEM_BYTES <= 227 * 1024, "shared memory per block");

void set_error(const lathe_args* a, const char* msg) {
  if (a->error == nullptr || a->error_bytes == 0) return;
  size_t i = 0;
  for (; msg[i] != '\0' && i + 1 < a->error_bytes; ++i) a->error[i] = msg[i];
  a->error[i] = '\0';
}

// A contiguous [B, H, S, D] bf16 tensor.
bool is_bhsd(const DLTensor& t) {
  if (t.ndim != 4 || t.dtype.code != kDLBfloat || t.dtype.bits != 16 || t.dtype.lanes != 1)
    return false;
  if (t.shape[3] != D) return false;
  if (t.strides == nullptr) return true;
  return t.strides[3] == 1 && t.strides[2] == D && t.strides[1] == t.shape[2] * D &&
         t.strides[0] == t.shape[1] * t.shape[2] * D;
}

bool same_shape(const DLTensor& a, const DLTensor& b) {
  for (int i = 0; i < 4; ++i)
    if (a.shape[i] != b.shape[i]) return false;
  return true;
}

template <class T>
T* data_of(const DLTensor& t) {
  return reinterpret_cast<T*>(static_cast<char*>(t.data) + t.byte_offset);
}

__device__ __forceinline__ uint32_t smem_u32(const void* p) {
  return static_cast<uint32_t>(__cvta_generic_to_shared(p));
}

// Two floats as a bf16 pair, the first in the low half (the lower column of an operand).
__device__ __forceinline__ uint32_t pack_bf16(float lo, float hi) {
  const __nv_bfloat162 h = __floats2bfloat162_rn(lo, hi);
  return *reinterpret_cast<const uint32_t*>(&h);
}

// 16 bytes global -> shared, bypassing L1 and registers; src_bytes = 0 writes 16 zero bytes.
__device__ __forceinline__ void cp_async16(uint32_t dst, const void* src, int src_bytes) {
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(dst),
               "l"(__cvta_generic_to_global(src)), "r"(src_bytes)
               : "memory");
}
__device__ __forceinline__ void cp_async_commit() {
  asm volatile("cp.async.commit_group;\n" ::: "memory");
}
template <int PENDING>
__device__ __forceinline__ void cp_async_wait() {
  asm volatile("cp.async.wait_group %0;\n" ::"n"(PENDING) : "memory");
}

// Shared-memory matrix descriptor: start address, leading / stride byte offsets (all >> 4),
// base offset 0 (bases are 1024-aligned), layout 1 = 128B swizzle (bits 62-63).
__device__ __forceinline__ uint64_t smem_desc(uint32_t addr, uint32_t lbo, uint32_t sbo) {
  return static_cast<uint64_t>((addr & 0x3FFFF) >> 4) |
         static_cast<uint64_t>((lbo & 0x3FFFF) >> 4) << 16 |
         static_cast<uint64_t>((sbo & 0x3FFFF) >> 4) << 32 | 1ull << 62;
}

__device__ __forceinline__ void wgmma_fence() {
  asm volatile("wgmma.fence.sync.aligned;\n" ::: "memory");
}
__device__ __forceinline__ void wgmma_commit() {
  asm volatile("wgmma.commit_group.sync.aligned;\n" ::: "memory");
}
template <int PENDING>
__device__ __forceinline__ void wgmma_wait() {
  asm volatile("wgmma.wait_group.sync.aligned %0;\n" ::"n"(PENDING) : "memory");
}
// Pins an accumulator: the compiler may not move its reads or writes across this point (the
// wgmma writes it asynchronously, after the asm statement that names it).
__device__ __forceinline__ void fence_operand(float& r) { asm volatile("" : "+f"(r)::"memory"); }

#define LATHE_ACC64(d)                                                                          \
  "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]),           \
      "+f"(d[7]), "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]),   \
      "+f"(d[14]), "+f"(d[15]), "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]),             \
      "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]), "+f"(d[24]), "+f"(d[25]),             \
      "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31]),             \
      "+f"(d[32]), "+f"(d[33]), "+f"(d[34]), "+f"(d[35]), "+f"(d[36]), "+f"(d[37]),             \
      "+f"(d[38]), "+f"(d[39]), "+f"(d[40]), "+f"(d[41]), "+f"(d[42]), "+f"(d[43]),             \
      "+f"(d[44]), "+f"(d[45]), "+f"(d[46]), "+f"(d[47]), "+f"(d[48]), "+f"(d[49]),             \
      "+f"(d[50]), "+f"(d[51]), "+f"(d[52]), "+f"(d[53]), "+f"(d[54]), "+f"(d[55]),             \
      "+f"(d[56]), "+f"(d[57]), "+f"(d[58]), "+f"(d[59]), "+f"(d[60]), "+f"(d[61]),             \
      "+f"(d[62]), "+f"(d[63])

#define LATHE_D64                                                                    \
  "{%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, "          \
  "%16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31, " \
  "%32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, %44, %45, %46, %47, " \
  "%48, %49, %50, %51, %52, %53, %54, %55, %56, %57, %58, %59, %60, %61, %62, %63}"

// D[64 x 128] (+)= A (64 x 16, K-major, descriptor) · B (16 x 128: a K-major [128 x 16] tile,
// trans-b = 0). scale_d = 0 overwrites D.
__device__ __forceinline__ void wgmma_ss(float (&d)[64], uint64_t desc_a, uint64_t desc_b,
                                         int scale_d) {
  asm volatile("{\n.reg .pred p;\nsetp.ne.b32 p, %66, 0;\n"
               "wgmma.mma_async.sync.aligned.m64n128k16.f32.bf16.bf16 " LATHE_D64
               ", %64, %65, p, 1, 1, 0, 0;\n}\n"
               : LATHE_ACC64(d)
               : "l"(desc_a), "l"(desc_b), "r"(scale_d)
               : "memory");
}

// D[64 x 128] += A (64 x 16 bf16 in registers, the m16n8k16 A layout per warp) · B (16 x 128,
// MN-major descriptor: trans-b = 1).
__device__ __forceinline__ void wgmma_rs(float (&d)[64], const uint32_t (&a)[4], uint64_t desc_b) {
  asm volatile("{\n.reg .pred p;\nsetp.ne.b32 p, 1, 0;\n"
               "wgmma.mma_async.sync.aligned.m64n128k16.f32.bf16.bf16 " LATHE_D64
               ", {%64, %65, %66, %67}, %68, p, 1, 1, 1;\n}\n"
               : LATHE_ACC64(d)
               : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "l"(desc_b)
               : "memory");
}

// Byte offset of 16-byte chunk `c` (0..7) of 128-byte row `r` in a 128B-swizzled panel.
__device__ __forceinline__ uint32_t swizzled(int r, int c) {
  return static_cast<uint32_t>(r * 128 + ((c ^ (r & 7)) << 4));
}

// Issues the copy of rows [r0, r0 + ROWS) of a [S, D] head into a two-panel tile at `dst`; rows
// past S are zero-filled (a garbage V row times p = 0 could still be NaN).
template <int ROWS>
__device__ __forceinline__ void load_tile(uint32_t dst, const __nv_bfloat16* __restrict__ src,
                                          int r0, int S) {
  constexpr int PER = ROWS * ROW_CHUNKS / THREADS;
#pragma unroll
  for (int i = 0; i < PER; ++i) {
    const int idx = threadIdx.x + i * THREADS, r = idx / ROW_CHUNKS, c = idx % ROW_CHUNKS;
    const bool in = r0 + r < S;
    cp_async16(dst + (c / 8) * (ROWS * 128) + swizzled(r, c % 8),
               in ? src + static_cast<size_t>(r0 + r) * D + c * 8 : src, in ? 16 : 0);
  }
}

__global__ void __launch_bounds__(THREADS, 1)
fmha_wgmma(const __nv_bfloat16* __restrict__ Q, const __nv_bfloat16* __restrict__ K,
           const __nv_bfloat16* __restrict__ V, __nv_bfloat16* __restrict__ O, int S, int causal,
           float scale_log2) {
  extern __shared__ __align__(1024) unsigned char smem_raw[];
  const uint32_t q_tile = (smem_u32(smem_raw) + 1023u) & ~1023u;  // then K0 V0 K1 V1
  const uint32_t kv_tiles = q_tile + Q_BYTES;
  const int lane = threadIdx.x & 31, wg = threadIdx.x >> 7, w = (threadIdx.x >> 5) & 3;
  const int g = lane >> 2, t = lane & 3;
  const int q0 = (gridDim.x - 1 - blockIdx.x) * BQ;  // longest causal rows first
  const size_t head = static_cast<size_t>(blockIdx.y) * S * D;
  const int wg0 = q0 + wg * 64;                       // the warpgroup's first row
  const int w0 = wg0 + w * 16;                        // the warp's first row
  const int row_a = w0 + g, row_b = row_a + 8;        // this thread's two rows

  const int k_end = causal ? min(S, q0 + BQ) : S;
  const int n_tiles = (k_end + BKV - 1) / BKV;

  // Q, then tile 0, each its own group; every thread commits the same groups, so wait_group
  // counts match tile numbers.
  load_tile<BQ>(q_tile, Q + head, q0, S);
  cp_async_commit();
  load_tile<BKV>(kv_tiles, K + head, 0, S);
  load_tile<BKV>(kv_tiles + KV_BYTES, V + head, 0, S);
  cp_async_commit();

  float o[64], s[64];
#pragma unroll
  for (int i = 0; i < 64; ++i) o[i] = s[i] = 0.0f;
  float m_a = -INFINITY, m_b = -INFINITY, l_a = 0.0f, l_b = 0.0f;
  const uint32_t q_rows = q_tile + wg * 64 * 128;  // this warpgroup's 64 rows of each panel

  for (int j = 0; j < n_tiles; ++j) {
    const int k0 = j * BKV;
    if (j + 1 < n_tiles) {
      const uint32_t next = kv_tiles + ((j + 1) & 1) * 2 * KV_BYTES;
      load_tile<BKV>(next, K + head, k0 + BKV, S);
      load_tile<BKV>(next + KV_BYTES, V + head, k0 + BKV, S);
    }
    cp_async_commit();   // possibly empty: keeps one group per tile
    cp_async_wait<1>();  // this thread's copies of Q and tile j are done
    asm volatile("fence.proxy.async.shared::cta;\n" ::: "memory");  // visible to wgmma
    __syncthreads();     // and everyone's
    const uint32_t ks = kv_tiles + (j & 1) * 2 * KV_BYTES, vs = ks + KV_BYTES;
    // Warpgroup-uniform: every row is past S, or before every key of this tile.
    if (wg0 >= S || (causal && k0 > wg0 + 63)) {
      __syncthreads();
      continue;
    }

    // S = Q Kᵀ over d in 8 k16 steps.
    wgmma_fence();
#pragma unroll
    for (int kk = 0; kk < D / 16; ++kk) {
      const uint32_t off = (kk % 4) * 32;  // 16 columns = 32 bytes inside the panel
      wgmma_ss(s, smem_desc(q_rows + (kk / 4) * Q_PANEL + off, 16, 1024),
               smem_desc(ks + (kk / 4) * KV_PANEL + off, 16, 1024), kk > 0 ? 1 : 0);
    }
    wgmma_commit();
    wgmma_wait<0>();
#pragma unroll
    for (int i = 0; i < 64; ++i) fence_operand(s[i]);

    // Scale (to log2 units), mask (only tiles that pass S or this warp's diagonal), row maxima.
    const bool edge = k0 + BKV > S || (causal && k0 + BKV - 1 > w0);
    float mt_a = -INFINITY, mt_b = -INFINITY;
#pragma unroll
    for (int n = 0; n < NS; ++n)
#pragma unroll
      for (int e = 0; e < 2; ++e) {
        const int key = k0 + n * 8 + 2 * t + e;
        const bool out_a = edge && (key >= S || (causal && key > row_a));
        const bool out_b = edge && (key >= S || (causal && key > row_b));
        s[4 * n + e] = out_a ? -INFINITY : s[4 * n + e] * scale_log2;
        s[4 * n + 2 + e] = out_b ? -INFINITY : s[4 * n + 2 + e] * scale_log2;
        mt_a = fmaxf(mt_a, s[4 * n + e]);
        mt_b = fmaxf(mt_b, s[4 * n + 2 + e]);
      }
#pragma unroll
    for (int x = 1; x <= 2; x <<= 1) {
      mt_a = fmaxf(mt_a, __shfl_xor_sync(0xffffffffu, mt_a, x));
      mt_b = fmaxf(mt_b, __shfl_xor_sync(0xffffffffu, mt_b, x));
    }
    const float mn_a = fmaxf(m_a, mt_a), mn_b = fmaxf(m_b, mt_b);
    // A row whose scores so far are all masked keeps m = -inf: exp(-inf - 0) = 0, not NaN.
    const float mu_a = mn_a == -INFINITY ? 0.0f : mn_a, mu_b = mn_b == -INFINITY ? 0.0f : mn_b;
    const float alpha_a = exp2f(m_a - mu_a), alpha_b = exp2f(m_b - mu_b);
    m_a = mn_a;
    m_b = mn_b;
    float ps_a = 0.0f, ps_b = 0.0f;
#pragma unroll
    for (int n = 0; n < NS; ++n)
#pragma unroll
      for (int e = 0; e < 2; ++e) {
        s[4 * n + e] = exp2f(s[4 * n + e] - mu_a);
        s[4 * n + 2 + e] = exp2f(s[4 * n + 2 + e] - mu_b);
        ps_a += s[4 * n + e];
        ps_b += s[4 * n + 2 + e];
      }
    l_a = l_a * alpha_a + ps_a;  // partial over this thread's columns; reduced at the end
    l_b = l_b * alpha_b + ps_b;
#pragma unroll
    for (int n = 0; n < NO; ++n) {
      o[4 * n] *= alpha_a;
      o[4 * n + 1] *= alpha_a;
      o[4 * n + 2] *= alpha_b;
      o[4 * n + 3] *= alpha_b;
    }

    // O += P V: P's k16 step kp is S's column groups 2 kp and 2 kp + 1, as bf16 pairs.
    uint32_t p[BKV / 16][4];
#pragma unroll
    for (int kp = 0; kp < BKV / 16; ++kp) {
      p[kp][0] = pack_bf16(s[8 * kp], s[8 * kp + 1]);
      p[kp][1] = pack_bf16(s[8 * kp + 2], s[8 * kp + 3]);
      p[kp][2] = pack_bf16(s[8 * kp + 4], s[8 * kp + 5]);
      p[kp][3] = pack_bf16(s[8 * kp + 6], s[8 * kp + 7]);
    }
    wgmma_fence();
#pragma unroll
    for (int kp = 0; kp < BKV / 16; ++kp)
      wgmma_rs(o, p[kp], smem_desc(vs + kp * 16 * 128, KV_PANEL, 1024));
    wgmma_commit();
    wgmma_wait<0>();
#pragma unroll
    for (int i = 0; i < 64; ++i) fence_operand(o[i]);
    __syncthreads();  // tile j's buffers are refilled by the next iteration's copy of tile j + 2
  }
  cp_async_wait<0>();  // only empty groups can be pending; leave no copy behind

  // Row sums over the 4 threads of a row; l >= 1 for every real row (its maximum's exp(0)).
#pragma unroll
  for (int x = 1; x <= 2; x <<= 1) {
    l_a += __shfl_xor_sync(0xffffffffu, l_a, x);
    l_b += __shfl_xor_sync(0xffffffffu, l_b, x);
  }
  const float inv_a = 1.0f / l_a, inv_b = 1.0f / l_b;
#pragma unroll
  for (int n = 0; n < NO; ++n) {
    const int d = n * 8 + 2 * t;
    if (row_a < S)
      *reinterpret_cast<uint32_t*>(O + head + static_cast<size_t>(row_a) * D + d) =
          pack_bf16(o[4 * n] * inv_a, o[4 * n + 1] * inv_a);
    if (row_b < S)
      *reinterpret_cast<uint32_t*>(O + head + static_cast<size_t>(row_b) * D + d) =
          pack_bf16(o[4 * n + 2] * inv_b, o[4 * n + 3] * inv_b);
  }
}

bool g_attr_set = false;  // the >48 KiB dynamic shared-memory opt-in, done once per load

int set_smem_attr() {
  if (g_attr_set) return 0;
  if (cudaFuncSetAttribute(fmha_wgmma, cudaFuncAttributeMaxDynamicSharedMemorySize,
                           static_cast<int>(SMEM_BYTES)) != cudaSuccess)
    return 1;
  g_attr_set = true;
  return 0;
}

}  // namespace

extern "C" int lathe_launch(const lathe_args* args) {
  if (args->num_inputs != 3 || args->num_outputs != 1 || args->num_scalars != 2) {
    set_error(args, "fmha_cuda: expects inputs Q, K, V, output O and scalars causal, scale");
    return 1;
  }
  const DLTensor& Qt = args->inputs[0];
  const DLTensor& Kt = args->inputs[1];
  const DLTensor& Vt = args->inputs[2];
  const DLTensor& Ot = args->outputs[0];
  if (!is_bhsd(Qt) || !is_bhsd(Kt) || !is_bhsd(Vt) || !is_bhsd(Ot) || !same_shape(Qt, Kt) ||
      !same_shape(Qt, Vt) || !same_shape(Qt, Ot)) {
    set_error(args, "fmha_cuda: Q, K, V, O must be contiguous bfloat16 [B, H, S, 128] of one shape");
    return 1;
  }
  const double causal = args->scalars[0], scale = args->scalars[1];
  if ((causal != 0.0 && causal != 1.0) || !(scale > 0.0) || !isfinite(scale)) {
    set_error(args, "fmha_cuda: causal must be 0 or 1 and scale finite and positive");
    return 1;
  }
  const int64_t BH = Qt.shape[0] * Qt.shape[1], S = Qt.shape[2];
  if (S > INT32_MAX / 2 || BH > 65535) {
    set_error(args, "fmha_cuda: S beyond 2^30 or B*H beyond 65535 (this kernel's grid)");
    return 1;
  }
  if (BH == 0 || S == 0) return 0;
  if (set_smem_attr() != 0) {
    set_error(args, "fmha_cuda: cannot raise the dynamic shared-memory limit");
    return 1;
  }
  const dim3 grid(static_cast<unsigned>((S + BQ - 1) / BQ), static_cast<unsigned>(BH));
  fmha_wgmma<<<grid, THREADS, SMEM_BYTES, static_cast<cudaStream_t>(args->stream)>>>(
      data_of<const __nv_bfloat16>(Qt), data_of<const __nv_bfloat16>(Kt),
      data_of<const __nv_bfloat16>(Vt), data_of<__nv_bfloat16>(Ot), static_cast<int>(S),
      causal != 0.0 ? 1 : 0, static_cast<float>(scale * 1.4426950408889634));  // scale · log2(e)
  if (cudaGetLastError() != cudaSuccess) {
    set_error(args, "fmha_cuda: kernel launch failed");
    return 1;
  }
  return 0;
}

extern "C" int lathe_init(void) { return set_smem_attr(); }
