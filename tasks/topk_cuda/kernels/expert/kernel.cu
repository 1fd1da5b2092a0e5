// Expert top-k on the GPU: X[R,C] fp32 -> V[R,K] fp32 (the K largest of each row, in no
// particular order) and I[R,K] int64 (their columns). A one-block-per-row radix select whose
// keys never leave registers: X is read from HBM once and nothing of the row goes through shared
// memory, which holds only the histogram.
//
// Layout: 512 threads per row, 8 keys per thread (C <= 4096, the task's contract). When
// C % 4 == 0 (every row 16-byte aligned, X being 256-byte aligned) thread t loads the float4s at
// column 4t and 4(t + 512); otherwise 8 scalars at columns t + 512i (coalesced either way).
//
// Order key: the float's bits with the sign bit set for positives and all bits flipped for
// negatives, so unsigned order is float order (-0 just below +0; NaN is outside the contract).
//
// Select: the K-th largest key T is built digit by digit, bits 31..21, 20..10, 9..0. A pass
// counts, in a 2048-bin shared histogram, the digit of every key whose higher bits equal T's so
// far; then each thread sums its 4 bins, a __shfl_down_sync suffix scan within warps plus the 16
// warp totals gives every thread the count of keys above its bins, and the one thread whose bins
// hold the `need`-th key (need: how many of the K are still to place inside the prefix) walks
// them. If that bin holds exactly `need` keys, all of them are taken and the select stops early
// (for normal data usually after 2 passes): T is then a prefix under a mask. Invariant: exactly
// K - need keys have (key & mask) > T, and at least need have (key & mask) == T.
//
// Compaction: per item, each warp ballots its keys with (key & mask) > T and == T; one lane takes
// __popc slots from a shared counter for each; a key > T writes slot base + rank, a key == T
// takes ticket base + rank and writes slot K - need + ticket when ticket < need. So exactly K
// (value, column) pairs come out, ties at the K-th value cut at `need` (which tied columns win
// depends on the atomics' order; the task checks indices against the input).
#include <cuda_runtime.h>
#include <lathe/abi.h>
#include <stddef.h>
#include <stdint.h>

namespace {

void set_error(const lathe_args* a, const char* msg) {
  if (a->error == nullptr || a->error_bytes == 0) return;
  size_t i = 0;
  for (; msg[i] != '\0' && i + 1 < a->error_bytes; ++i) a->error[i] = msg[i];
  a->error[i] = '\0';
}

bool is_matrix(const DLTensor& t, uint8_t code, uint8_t bits) {
  if (t.ndim != 2 || t.dtype.code != code || t.dtype.bits != bits || t.dtype.lanes != 1)
    return false;
  return t.strides == nullptr || (t.strides[1] == 1 && t.strides[0] == t.shape[1]);
}

template <class T>
T* data_of(const DLTensor& t) {
  return reinterpret_cast<T*>(static_cast<char*>(t.data) + t.byte_offset);
}

constexpr int THREADS = 512;
constexpr int WARPS = THREADS / 32;
constexpr int ITEMS = 8;  // keys per thread
constexpr int MAX_C = THREADS * ITEMS;
constexpr int BINS = 2048;  // 11-bit digits
constexpr int BINS_PER_THREAD = BINS / THREADS;

__device__ __forceinline__ uint32_t order_key(float f) {
  const uint32_t u = __float_as_uint(f);
  return (u & 0x80000000u) ? ~u : (u | 0x80000000u);
}

__device__ __forceinline__ float key_value(uint32_t k) {
  return __uint_as_float((k & 0x80000000u) ? (k & 0x7fffffffu) : ~k);
}

// Column of item i of thread t.
template <bool VEC>
__device__ __forceinline__ int column(int t, int i) {
  return VEC ? 4 * (t + (i / 4) * THREADS) + (i % 4) : t + i * THREADS;
}

// One row per block; VEC: C % 4 == 0 (float4 loads). Two kernels below instantiate it, so that
// every kernel is launched by name (no template arguments at the launch).
template <bool VEC>
__device__ __forceinline__ void select_row(const float* __restrict__ x, float* __restrict__ vals,
                                           int64_t* __restrict__ idx, int C, int K) {
  __shared__ int hist[BINS];
  __shared__ int warp_total[WARPS];
  __shared__ uint32_t s_prefix;
  __shared__ int s_need, s_gt, s_eq, s_done;
  const int tid = threadIdx.x, lane = tid & 31, warp = tid >> 5;
  const float* row = x + static_cast<size_t>(blockIdx.x) * C;

  uint32_t key[ITEMS];
  if (VEC) {
    const float4* row4 = reinterpret_cast<const float4*>(row);
#pragma unroll
    for (int h = 0; h < ITEMS / 4; ++h) {
      const int q = tid + h * THREADS;
      float4 f = make_float4(0.f, 0.f, 0.f, 0.f);
      if (4 * q < C) f = row4[q];
      key[4 * h + 0] = order_key(f.x);
      key[4 * h + 1] = order_key(f.y);
      key[4 * h + 2] = order_key(f.z);
      key[4 * h + 3] = order_key(f.w);
    }
  } else {
#pragma unroll
    for (int i = 0; i < ITEMS; ++i) {
      const int c = column<VEC>(tid, i);
      key[i] = c < C ? order_key(row[c]) : 0u;
    }
  }
  if (tid == 0) {
    s_prefix = 0;
    s_need = K;
    s_gt = 0;
    s_eq = 0;
    s_done = 0;
  }

  uint32_t mask = 0;  // the bits of T found so far
#pragma unroll 1
  for (int pass = 0; pass < 3; ++pass) {
    const int shift = pass == 0 ? 21 : (pass == 1 ? 10 : 0);
    const uint32_t digit = pass == 2 ? 1023u : 2047u;
#pragma unroll
    for (int j = 0; j < BINS_PER_THREAD; ++j) hist[tid + j * THREADS] = 0;
    __syncthreads();  // cleared bins, s_prefix and s_need are visible
    const uint32_t prefix = s_prefix;
    int need = s_need;
#pragma unroll
    for (int i = 0; i < ITEMS; ++i)
      if (column<VEC>(tid, i) < C && (key[i] & mask) == prefix)
        atomicAdd(&hist[(key[i] >> shift) & digit], 1);
    __syncthreads();
    // Thread t owns bins 4t .. 4t+3; `above` = keys in the bins of threads > t.
    int h[BINS_PER_THREAD];
    int own = 0;
#pragma unroll
    for (int j = 0; j < BINS_PER_THREAD; ++j) {
      h[j] = hist[BINS_PER_THREAD * tid + j];
      own += h[j];
    }
    int suffix = own;  // keys in the bins of lanes >= this one, within the warp
#pragma unroll
    for (int o = 1; o < 32; o <<= 1) {
      const int t = __shfl_down_sync(0xffffffffu, suffix, o);
      if (lane + o < 32) suffix += t;
    }
    if (lane == 0) warp_total[warp] = suffix;
    __syncthreads();  // every thread has read s_need and hist; warp totals are posted
    for (int w = warp + 1; w < WARPS; ++w) suffix += warp_total[w];
    const int above = suffix - own;
    // need <= keys inside the prefix, so exactly one thread has above < need <= suffix.
    if (above < need && need <= suffix) {
      need -= above;
#pragma unroll
      for (int j = BINS_PER_THREAD - 1; j >= 0; --j) {
        if (h[j] >= need) {
          s_prefix = prefix | (static_cast<uint32_t>(BINS_PER_THREAD * tid + j) << shift);
          s_need = need;
          s_done = h[j] == need;  // the whole bin is taken: no need to split it further
          break;
        }
        need -= h[j];
      }
    }
    mask |= digit << shift;
    __syncthreads();  // the owner's writes are visible; everyone is done with warp_total
    if (s_done) break;  // block-uniform
  }

  const uint32_t T = s_prefix;
  const int need = s_need, above = K - need;
  float* v = vals + static_cast<size_t>(blockIdx.x) * K;
  int64_t* ix = idx + static_cast<size_t>(blockIdx.x) * K;
  const uint32_t below = (1u << lane) - 1u;  // lanes under this one
#pragma unroll
  for (int i = 0; i < ITEMS; ++i) {
    const int c = column<VEC>(tid, i);
    const uint32_t km = key[i] & mask;
    const bool gt = c < C && km > T, eq = c < C && km == T;
    const uint32_t m_gt = __ballot_sync(0xffffffffu, gt), m_eq = __ballot_sync(0xffffffffu, eq);
    int base_gt = 0, base_eq = 0;
    if (lane == 0) {
      if (m_gt) base_gt = atomicAdd(&s_gt, __popc(m_gt));
      if (m_eq) base_eq = atomicAdd(&s_eq, __popc(m_eq));
    }
    base_gt = __shfl_sync(0xffffffffu, base_gt, 0);
    base_eq = __shfl_sync(0xffffffffu, base_eq, 0);
    int slot = -1;
    if (gt) {
      slot = base_gt + __popc(m_gt & below);
    } else if (eq) {
      const int ticket = base_eq + __popc(m_eq & below);
      if (ticket < need) slot = above + ticket;
    }
    if (slot >= 0) {
      v[slot] = key_value(key[i]);
      ix[slot] = c;
    }
  }
}

__global__ void __launch_bounds__(THREADS)
topk_expert_vec(const float* __restrict__ x, float* __restrict__ vals, int64_t* __restrict__ idx,
                int C, int K) {
  select_row<true>(x, vals, idx, C, K);
}

__global__ void __launch_bounds__(THREADS)
topk_expert_scalar(const float* __restrict__ x, float* __restrict__ vals,
                   int64_t* __restrict__ idx, int C, int K) {
  select_row<false>(x, vals, idx, C, K);
}

}  // namespace

extern "C" int lathe_launch(const lathe_args* args) {
  if (args->num_inputs != 1 || args->num_outputs != 2) {
    set_error(args, "topk_cuda: expects input X and outputs V, I");
    return 1;
  }
  const DLTensor& X = args->inputs[0];
  const DLTensor& V = args->outputs[0];
  const DLTensor& I = args->outputs[1];
  if (!is_matrix(X, kDLFloat, 32) || !is_matrix(V, kDLFloat, 32) || !is_matrix(I, kDLInt, 64)) {
    set_error(args, "topk_cuda: X and V must be contiguous 2-D float32, I 2-D int64");
    return 1;
  }
  const int64_t R = X.shape[0], C = X.shape[1], K = V.shape[1];
  if (V.shape[0] != R || I.shape[0] != R || I.shape[1] != K || K > C) {
    set_error(args, "topk_cuda: shapes disagree (X[R,C], V[R,K], I[R,K], K <= C)");
    return 1;
  }
  if (C > MAX_C || R > INT32_MAX) {
    set_error(args, "topk_cuda: this kernel takes rows of at most 4096 columns");
    return 1;
  }
  if (R == 0 || K == 0) return 0;
  cudaStream_t stream = static_cast<cudaStream_t>(args->stream);
  const unsigned grid = static_cast<unsigned>(R);
  if (C % 4 == 0)
    topk_expert_vec<<<grid, THREADS, 0, stream>>>(data_of<const float>(X), data_of<float>(V),
                                                  data_of<int64_t>(I), static_cast<int>(C),
                                                  static_cast<int>(K));
  else
    topk_expert_scalar<<<grid, THREADS, 0, stream>>>(data_of<const float>(X), data_of<float>(V),
                                                     data_of<int64_t>(I), static_cast<int>(C),
                                                     static_cast<int>(K));
  if (cudaGetLastError() != cudaSuccess) {
    set_error(args, "topk_cuda: kernel launch failed");
    return 1;
  }
  return 0;
}
