// Stage 1 FMHA forward: O = softmax(Q Kᵀ · scale [+ causal mask]) V, bf16 [B, H, S, 128].
//
// Adds to the naive kernel K/V tiles in shared memory and the online softmax:
//  - a block owns BQ = 64 query rows of one (b, h), one row per thread (64 threads), and walks the
//    keys in tiles of BK = 32 rows of K and V staged in shared memory by the whole block, so each
//    key row is read from global memory once per block instead of once per thread;
//  - one pass over the keys: per tile the scores of the thread's row are computed into 32
//    registers, the running maximum m and running sum l are updated and the fp32 output row
//    (128 registers) is rescaled by alpha = exp(m_old - m_new) before the tile's p·v is added.
//    Every score is computed once (the naive computes each twice).
// Shared layout: Qs[64][130] (65 32-bit words per row: the 32 threads of a warp read 32 different
// rows at one column, an odd pitch puts them in 32 different banks), Ks[32][128] and Vs[32][128]
// read as uint4 at one address per warp (broadcasts). Still FFMA: 8 FMAs per shared load.
// Causal: key tiles past the block's last query row are never loaded (the loop bound); tiles that
// straddle the diagonal or the end of S are masked element by element. Query tiles run in reverse
// order so the longest causal blocks start first.
#include <cuda_bf16.h>
#include <cuda_runtime.h>
#include <lathe/abi.h>
#include <math.h>
#include <stddef.h>
#include <stdint.h>

namespace {

constexpr int D = 128;            // head dimension: the task's contract
constexpr int BQ = 64;            // query rows per block = threads
constexpr int BK = 32;            // keys per tile
constexpr int THREADS = BQ;
constexpr int QP = D + 2;         // Qs pitch in bf16: 65 words
constexpr int CHUNKS = D / 8;     // uint4 per row

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

__device__ __forceinline__ float2 bf2(uint32_t w) {
  return __bfloat1622float2(*reinterpret_cast<const __nv_bfloat162*>(&w));
}

// Rows [r0, r0 + BK) of a [S, D] head into a [BK][D] shared tile; rows past S are zeros (a
// garbage V row times p = 0 could still be NaN).
__device__ __forceinline__ void load_tile(uint4* __restrict__ dst, const __nv_bfloat16* __restrict__ src,
                                          int r0, int S) {
#pragma unroll
  for (int i = 0; i < BK * CHUNKS / THREADS; ++i) {
    const int idx = threadIdx.x + i * THREADS, r = idx / CHUNKS, c = idx % CHUNKS;
    dst[idx] = r0 + r < S ? reinterpret_cast<const uint4*>(src + static_cast<size_t>(r0 + r) * D)[c]
                          : make_uint4(0u, 0u, 0u, 0u);
  }
}

__global__ void __launch_bounds__(THREADS)
fmha_smem(const __nv_bfloat16* __restrict__ Q, const __nv_bfloat16* __restrict__ K,
          const __nv_bfloat16* __restrict__ V, __nv_bfloat16* __restrict__ O, int S, int causal,
          float scale) {
  __shared__ __align__(16) uint32_t Qs[BQ * QP / 2];
  __shared__ __align__(16) uint4 Ks[BK * CHUNKS];
  __shared__ __align__(16) uint4 Vs[BK * CHUNKS];
  const int tid = threadIdx.x;
  const int q0 = (gridDim.x - 1 - blockIdx.x) * BQ;  // longest causal tiles first
  const int row = q0 + tid;
  const size_t head = static_cast<size_t>(blockIdx.y) * S * D;

  // The Q tile, 16 bytes per global load, stored as four words at the odd pitch.
#pragma unroll
  for (int i = 0; i < BQ * CHUNKS / THREADS; ++i) {
    const int idx = tid + i * THREADS, r = idx / CHUNKS, c = idx % CHUNKS;
    const uint4 v = q0 + r < S
                        ? reinterpret_cast<const uint4*>(Q + head + static_cast<size_t>(q0 + r) * D)[c]
                        : make_uint4(0u, 0u, 0u, 0u);
    uint32_t* d = Qs + r * (QP / 2) + c * 4;
    d[0] = v.x;
    d[1] = v.y;
    d[2] = v.z;
    d[3] = v.w;
  }

  float acc[D];
#pragma unroll
  for (int d = 0; d < D; ++d) acc[d] = 0.0f;
  float m = -INFINITY, l = 0.0f;
  const int k_end = causal ? min(S, q0 + BQ) : S;

  for (int k0 = 0; k0 < k_end; k0 += BK) {
    __syncthreads();  // the previous tile is consumed (and, the first time, Qs is written)
    load_tile(Ks, K + head, k0, S);
    load_tile(Vs, V + head, k0, S);
    __syncthreads();

    float s[BK];
#pragma unroll
    for (int j = 0; j < BK; ++j) s[j] = 0.0f;
    const uint32_t* qrow = Qs + tid * (QP / 2);
#pragma unroll 4
    for (int c = 0; c < CHUNKS; ++c) {
      const float2 q01 = bf2(qrow[4 * c]), q23 = bf2(qrow[4 * c + 1]);
      const float2 q45 = bf2(qrow[4 * c + 2]), q67 = bf2(qrow[4 * c + 3]);
#pragma unroll
      for (int j = 0; j < BK; ++j) {
        const uint4 kv = Ks[j * CHUNKS + c];
        const float2 k01 = bf2(kv.x), k23 = bf2(kv.y), k45 = bf2(kv.z), k67 = bf2(kv.w);
        float t = s[j];
        t = fmaf(q01.x, k01.x, t);
        t = fmaf(q01.y, k01.y, t);
        t = fmaf(q23.x, k23.x, t);
        t = fmaf(q23.y, k23.y, t);
        t = fmaf(q45.x, k45.x, t);
        t = fmaf(q45.y, k45.y, t);
        t = fmaf(q67.x, k67.x, t);
        s[j] = fmaf(q67.y, k67.y, t);
      }
    }
    // Mask only where the tile reaches past S or past the diagonal of some row of the block.
    const bool edge = k0 + BK > S || (causal && k0 + BK - 1 > q0);
    float mt = -INFINITY;
#pragma unroll
    for (int j = 0; j < BK; ++j) {
      const int key = k0 + j;
      s[j] = (edge && (key >= S || (causal && key > row))) ? -INFINITY : s[j] * scale;
      mt = fmaxf(mt, s[j]);
    }
    const float m_new = fmaxf(m, mt);
    // A row with every score so far masked keeps m = -inf; exp(-inf - 0) = 0 then, not NaN.
    const float m_use = m_new == -INFINITY ? 0.0f : m_new;
    const float alpha = expf(m - m_use);
    m = m_new;
    float ps = 0.0f;
#pragma unroll
    for (int j = 0; j < BK; ++j) {
      s[j] = expf(s[j] - m_use);
      ps += s[j];
    }
    l = l * alpha + ps;
#pragma unroll
    for (int d = 0; d < D; ++d) acc[d] *= alpha;
#pragma unroll 2
    for (int j = 0; j < BK; ++j) {
      const float p = s[j];
#pragma unroll
      for (int c = 0; c < CHUNKS; ++c) {
        const uint4 vv = Vs[j * CHUNKS + c];
        const float2 v01 = bf2(vv.x), v23 = bf2(vv.y), v45 = bf2(vv.z), v67 = bf2(vv.w);
        acc[8 * c + 0] = fmaf(p, v01.x, acc[8 * c + 0]);
        acc[8 * c + 1] = fmaf(p, v01.y, acc[8 * c + 1]);
        acc[8 * c + 2] = fmaf(p, v23.x, acc[8 * c + 2]);
        acc[8 * c + 3] = fmaf(p, v23.y, acc[8 * c + 3]);
        acc[8 * c + 4] = fmaf(p, v45.x, acc[8 * c + 4]);
        acc[8 * c + 5] = fmaf(p, v45.y, acc[8 * c + 5]);
        acc[8 * c + 6] = fmaf(p, v67.x, acc[8 * c + 6]);
        acc[8 * c + 7] = fmaf(p, v67.y, acc[8 * c + 7]);
      }
    }
  }
  if (row >= S) return;
  // l >= 1 for every real row: its maximum's own term is exp(0).
  const float inv = 1.0f / l;
  __nv_bfloat162* o = reinterpret_cast<__nv_bfloat162*>(O + head + static_cast<size_t>(row) * D);
#pragma unroll
  for (int d = 0; d < D; d += 2) o[d / 2] = __floats2bfloat162_rn(acc[d] * inv, acc[d + 1] * inv);
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
  const dim3 grid(static_cast<unsigned>((S + BQ - 1) / BQ), static_cast<unsigned>(BH));
  fmha_smem<<<grid, THREADS, 0, static_cast<cudaStream_t>(args->stream)>>>(
      data_of<const __nv_bfloat16>(Qt), data_of<const __nv_bfloat16>(Kt),
      data_of<const __nv_bfloat16>(Vt), data_of<__nv_bfloat16>(Ot), static_cast<int>(S),
      causal != 0.0 ? 1 : 0, static_cast<float>(scale));
  if (cudaGetLastError() != cudaSuccess) {
    set_error(args, "fmha_cuda: kernel launch failed");
    return 1;
  }
  return 0;
}
