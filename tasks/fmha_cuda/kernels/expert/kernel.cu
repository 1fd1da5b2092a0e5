// Expert FMHA forward: O = softmax(Q Kᵀ · scale [+ causal mask]) V, bf16 [B, H, S, 128].
//
// Stage 3 (FlashAttention-2 style mma.sync m16n8k16 + ldmatrix, P in registers, double-buffered
// cp.async K/V tiles) with:
//  - fast math (--use_fast_math, which the task allows: its output is bf16, rounded to 2^-9
//    relative, and ex2.approx errs by 2^-22): the softmax runs in base 2 with log2(e) folded into
//    the scale, so every exponential is one FFMA (s · scale·log2e - m) and one MUFU.EX2, the
//    running maximum is kept in log2 units, and 1/l is an approximate reciprocal;
//  - 128-query blocks of 8 warps (16 rows each): each 64-key K/V tile staged in shared memory
//    feeds twice as many rows, halving the K/V traffic from L2 per FLOP; one block per SM
//    (~230 registers x 256 threads), 68 KiB of shared memory;
//  - per-warp work skipping: a warp whose 16 rows are all past the causal diagonal of a tile, or
//    all past S (the last query tile of a ragged S), skips that tile's math (m, l and O are
//    unchanged by a tile whose p are all 0) but still takes part in the copies and barriers.
//
// Data flow, unchanged from stage 3:
//  - a block owns BQ = 128 query rows of one (b, h) with 8 warps, each warp 16 rows; key tiles are
//    BK = 64 rows of K and V in shared memory ([K0][V0][K1][V1]), shared by the 8 warps; tile j + 1
//    is copied by cp.async.cg while tile j is computed; the Q tile is staged in K1/V1 first;
//  - a warp keeps its Q rows as mma A fragments in registers for the whole kernel (16 x 128 bf16 =
//    8 k16 steps x 4 registers), loaded once by ldmatrix;
//  - S = Q Kᵀ (16 x 64 per warp, 8 n8 tiles x 4 fp32 registers): K sits in shared memory as
//    Ks[key][d], which is exactly the "col" B operand (b0 = (d 2t, 2t+1; key g)), so a plain
//    ldmatrix.x4 gives the B fragments of two key tiles for one k16 step;
//  - the online softmax of stage 1 on the accumulator fragment: a thread holds rows g and g + 8
//    (g = lane / 4) at keys 2t, 2t+1 of each n8 tile (t = lane % 4); row maxima and sums reduce
//    over the 4 threads of a row with two xor shuffles (1, 2);
//  - O += P V without P leaving registers: the C fragment of S tiles 2j and 2j+1, rounded to bf16
//    pairs, is the A fragment of the k16 step j (a0 = row g keys 2t.., a1 = row g+8, a2/a3 the
//    same at keys 2t+8..), and V sits as Vs[key][d], k-major, so ldmatrix.trans gives its B
//    fragments. The row sum l is kept from the fp32 p (FlashAttention does the same).
// Shared rows are padded to 136 bf16 (272 bytes): the 8 rows one ldmatrix reads fall in 8
// different 16-byte bank groups. Causal: key tiles past the block's last query row are never
// loaded.
#include <cuda_bf16.h>
#include <cuda_runtime.h>
#include <lathe/abi.h>
#include <math.h>
#include <stddef.h>
#include <stdint.h>

namespace {

constexpr int D = 128;             // head dimension: the task's contract
constexpr int BQ = 128;            // query rows per block
constexpr int BK = 64;             // keys per tile
constexpr int WARPS = BQ / 16;     // 8: one m16 tile of rows per warp
constexpr int THREADS = 32 * WARPS;
constexpr int LD = D + 8;          // shared row pitch, bf16 (272 bytes)
constexpr int CHUNKS = D / 8;      // uint4 per row
constexpr int NS = BK / 8;         // 8 n8 tiles of S per warp
constexpr int NO = D / 8;          // 16 n8 tiles of O per warp
constexpr int TILE = BK * LD;      // bf16 per shared tile
constexpr size_t SMEM_BYTES = 4 * TILE * sizeof(__nv_bfloat16);  // K0 V0 K1 V1: 69632

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

// Four 8x8 b16 matrices; lanes 8i..8i+7 give the row addresses of matrix i.
__device__ __forceinline__ void ldmatrix_x4(uint32_t (&r)[4], uint32_t addr) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0, %1, %2, %3}, [%4];\n"
               : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
               : "r"(addr));
}

__device__ __forceinline__ void ldmatrix_x4_trans(uint32_t (&r)[4], uint32_t addr) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0, %1, %2, %3}, [%4];\n"
               : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
               : "r"(addr));
}

// D = A (16x16 row) · B (16x8 col) + D, bf16 operands, fp32 accumulators.
__device__ __forceinline__ void mma_bf16_16816(float (&d)[4], const uint32_t (&a)[4], uint32_t b0,
                                               uint32_t b1) {
  asm volatile("mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 "
               "{%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, {%0, %1, %2, %3};\n"
               : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
               : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
}

// Two floats as a bf16 pair, the first in the low half (the lower column of an mma operand).
__device__ __forceinline__ uint32_t pack_bf16(float lo, float hi) {
  const __nv_bfloat162 h = __floats2bfloat162_rn(lo, hi);
  return *reinterpret_cast<const uint32_t*>(&h);
}

// 16 bytes global -> shared, bypassing L1 and registers; src_bytes = 0 writes 16 zero bytes.
__device__ __forceinline__ void cp_async16(uint32_t dst, const void* src, int src_bytes) {
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(dst), "l"(src),
               "r"(src_bytes)
               : "memory");
}

__device__ __forceinline__ void cp_async_commit() {
  asm volatile("cp.async.commit_group;\n" ::: "memory");
}

// Wait until at most PENDING of this thread's committed groups are still in flight.
template <int PENDING>
__device__ __forceinline__ void cp_async_wait() {
  asm volatile("cp.async.wait_group %0;\n" ::"n"(PENDING) : "memory");
}

// Issues the copy of rows [r0, r0 + rows) of a [S, D] head into a [rows][LD] shared tile; rows
// past S are zero-filled (a garbage V row times p = 0 could still be NaN).
template <int ROWS>
__device__ __forceinline__ void load_tile(__nv_bfloat16* __restrict__ dst,
                                          const __nv_bfloat16* __restrict__ src, int r0, int S) {
  constexpr int PER = ROWS * CHUNKS / THREADS;
#pragma unroll
  for (int i = 0; i < PER; ++i) {
    const int idx = threadIdx.x + i * THREADS, r = idx / CHUNKS, c = idx % CHUNKS;
    const bool in = r0 + r < S;
    cp_async16(smem_u32(dst + r * LD + c * 8), in ? src + static_cast<size_t>(r0 + r) * D + c * 8 : src,
               in ? 16 : 0);
  }
}

__global__ void __launch_bounds__(THREADS, 1)
fmha_expert(const __nv_bfloat16* __restrict__ Q, const __nv_bfloat16* __restrict__ K,
            const __nv_bfloat16* __restrict__ V, __nv_bfloat16* __restrict__ O, int S,
            int causal, float scale_log2) {
  extern __shared__ __align__(128) __nv_bfloat16 smem[];  // [K0][V0][K1][V1]
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  const int g = lane >> 2, t = lane & 3;
  const int q0 = (gridDim.x - 1 - blockIdx.x) * BQ;  // longest causal tiles first
  const size_t head = static_cast<size_t>(blockIdx.y) * S * D;
  const int w0 = q0 + warp * 16;                          // the warp's first row
  const int row_a = w0 + g, row_b = row_a + 8;             // this thread's two rows

  const int k_end = causal ? min(S, q0 + BQ) : S;
  const int n_tiles = (k_end + BK - 1) / BK;

  // Q: global -> shared (K1's space) -> A fragments, one per k16 step of d; tile 0 is in flight
  // meanwhile. Every thread commits the same groups, so wait_group counts match tile numbers.
  static_assert(BQ <= 2 * BK, "the Q tile is staged in K1 and V1");
  load_tile<BQ>(smem + 2 * TILE, Q + head, q0, S);
  cp_async_commit();
  load_tile<BK>(smem, K + head, 0, S);
  load_tile<BK>(smem + TILE, V + head, 0, S);
  cp_async_commit();
  cp_async_wait<1>();  // Q has landed (tile 0 may not have)
  __syncthreads();
  uint32_t qf[D / 16][4];
#pragma unroll
  for (int kk = 0; kk < D / 16; ++kk)
    ldmatrix_x4(qf[kk], smem_u32(smem + 2 * TILE + (warp * 16 + (lane & 15)) * LD + kk * 16 +
                                 (lane >> 4) * 8));
  __syncthreads();  // K1/V1 are free for tile 1

  float o[NO][4];
#pragma unroll
  for (int n = 0; n < NO; ++n)
#pragma unroll
    for (int e = 0; e < 4; ++e) o[n][e] = 0.0f;
  float m_a = -INFINITY, m_b = -INFINITY, l_a = 0.0f, l_b = 0.0f;

  for (int j = 0; j < n_tiles; ++j) {
    const int k0 = j * BK;
    if (j + 1 < n_tiles) {
      __nv_bfloat16* next = smem + ((j + 1) & 1) * 2 * TILE;
      load_tile<BK>(next, K + head, k0 + BK, S);
      load_tile<BK>(next + TILE, V + head, k0 + BK, S);
    }
    cp_async_commit();   // possibly empty: keeps one group per tile
    cp_async_wait<1>();  // this thread's copies of tile j are done
    __syncthreads();     // and everyone's
    const __nv_bfloat16* Ks = smem + (j & 1) * 2 * TILE;
    const __nv_bfloat16* Vs = Ks + TILE;
    // Warp-uniform: every row of this warp is past S, or past the diagonal for every key here.
    if (w0 >= S || (causal && k0 > w0 + 15)) {
      __syncthreads();
      continue;
    }

    // S = Q Kᵀ. Matrix i of the x4 load: keys n0 + 8 (i / 2) + (0..7) at d = kk + 8 (i % 2), i.e.
    // b0, b1 of key tile 2p, then b0, b1 of key tile 2p + 1.
    float s[NS][4];
#pragma unroll
    for (int n = 0; n < NS; ++n)
#pragma unroll
      for (int e = 0; e < 4; ++e) s[n][e] = 0.0f;
#pragma unroll
    for (int kk = 0; kk < D / 16; ++kk)
#pragma unroll
      for (int p = 0; p < NS / 2; ++p) {
        uint32_t r[4];
        ldmatrix_x4(r, smem_u32(Ks + (p * 16 + (lane & 7) + ((lane >> 4) << 3)) * LD + kk * 16 +
                                ((lane >> 3) & 1) * 8));
        mma_bf16_16816(s[2 * p], qf[kk], r[0], r[1]);
        mma_bf16_16816(s[2 * p + 1], qf[kk], r[2], r[3]);
      }

    // Scale (to log2 units), mask (only tiles that pass S or this warp's diagonal), row maxima.
    const bool edge = k0 + BK > S || (causal && k0 + BK - 1 > w0);
    float mt_a = -INFINITY, mt_b = -INFINITY;
#pragma unroll
    for (int n = 0; n < NS; ++n)
#pragma unroll
      for (int e = 0; e < 2; ++e) {
        const int key = k0 + n * 8 + 2 * t + e;
        const bool out_a = edge && (key >= S || (causal && key > row_a));
        const bool out_b = edge && (key >= S || (causal && key > row_b));
        s[n][e] = out_a ? -INFINITY : s[n][e] * scale_log2;
        s[n][e + 2] = out_b ? -INFINITY : s[n][e + 2] * scale_log2;
        mt_a = fmaxf(mt_a, s[n][e]);
        mt_b = fmaxf(mt_b, s[n][e + 2]);
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
        s[n][e] = exp2f(s[n][e] - mu_a);
        s[n][e + 2] = exp2f(s[n][e + 2] - mu_b);
        ps_a += s[n][e];
        ps_b += s[n][e + 2];
      }
    l_a = l_a * alpha_a + ps_a;  // partial over this thread's columns; reduced at the end
    l_b = l_b * alpha_b + ps_b;
#pragma unroll
    for (int n = 0; n < NO; ++n) {
      o[n][0] *= alpha_a;
      o[n][1] *= alpha_a;
      o[n][2] *= alpha_b;
      o[n][3] *= alpha_b;
    }

    // O += P V, P as A fragments straight from the S accumulators.
#pragma unroll
    for (int kp = 0; kp < BK / 16; ++kp) {
      uint32_t a[4];
      a[0] = pack_bf16(s[2 * kp][0], s[2 * kp][1]);
      a[1] = pack_bf16(s[2 * kp][2], s[2 * kp][3]);
      a[2] = pack_bf16(s[2 * kp + 1][0], s[2 * kp + 1][1]);
      a[3] = pack_bf16(s[2 * kp + 1][2], s[2 * kp + 1][3]);
#pragma unroll
      for (int p = 0; p < NO / 2; ++p) {
        uint32_t r[4];
        ldmatrix_x4_trans(r, smem_u32(Vs + (kp * 16 + (lane & 15)) * LD + p * 16 + (lane >> 4) * 8));
        mma_bf16_16816(o[2 * p], a, r[0], r[1]);
        mma_bf16_16816(o[2 * p + 1], a, r[2], r[3]);
      }
    }
    __syncthreads();  // tile j's buffer is refilled by the next iteration's copy of tile j + 2
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
          pack_bf16(o[n][0] * inv_a, o[n][1] * inv_a);
    if (row_b < S)
      *reinterpret_cast<uint32_t*>(O + head + static_cast<size_t>(row_b) * D + d) =
          pack_bf16(o[n][2] * inv_b, o[n][3] * inv_b);
  }
}

bool g_attr_set = false;  // the >48 KiB dynamic shared-memory opt-in, done once per load

int set_smem_attr() {
  if (g_attr_set) return 0;
  if (cudaFuncSetAttribute(fmha_expert, cudaFuncAttributeMaxDynamicSharedMemorySize,
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
  fmha_expert<<<grid, THREADS, SMEM_BYTES, static_cast<cudaStream_t>(args->stream)>>>(
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
