// Stage 3 top-k on the GPU: X[R,C] fp32 -> V[R,K] fp32, I[R,K] int64. Stage 2's radix select
// (one 512-thread block per row, keys in shared memory, 4 passes of 8-bit digits) with its two
// serial steps done by warps:
//  - the bin search: warp 0 holds 8 bins per lane, sums them, and a __shfl_down_sync suffix scan
//    gives each lane the count above its bins; the one lane whose range holds the `need`-th key
//    walks its 8 bins (stage 2: thread 0 walked up to 256 bins while 511 threads waited);
//  - the compaction: each warp ballots which of its 32 keys are > T (then == T), and one lane
//    takes __popc(ballot) slots with one shared atomic; a lane's slot is that base plus the
//    number of ballot bits below it (stage 2: one atomic per selected key).
//
// As in stage 2:
//
// Order key: the float's bits with the sign bit set for positives and all bits flipped for
// negatives, so that unsigned order is float order (-0 just below +0; NaN is outside the task's
// contract). The K-th largest key T is found one 8-bit digit at a time, most significant first:
// a pass counts, in a 256-bin shared histogram, the digit of every key whose higher digits equal
// T's digits found so far, and the bins are walked from the top until the count reaches
// `need` (how many of the K are still to be placed inside the current prefix). After 4 passes T
// is exact, exactly K - need keys are > T, and need >= 1 of the keys equal T are to be taken.
// Compaction: a key > T takes a slot in [0, K - need) from one shared counter, a key == T a
// ticket from another and writes slot K - need + ticket only if ticket < need; so exactly K
// elements come out, ties at T cut at `need`. The order within a row (and which tied columns
// win) depends on the atomics' order: the task compares rows as multisets and checks indices
// against the input. Shared memory: 4*C + 1 KiB (C <= 4096, the task's contract).
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
constexpr int MAX_C = 4096;
constexpr int BINS = 256;

__device__ __forceinline__ uint32_t order_key(float f) {
  const uint32_t u = __float_as_uint(f);
  return (u & 0x80000000u) ? ~u : (u | 0x80000000u);
}

__device__ __forceinline__ float key_value(uint32_t k) {
  return __uint_as_float((k & 0x80000000u) ? (k & 0x7fffffffu) : ~k);
}

__global__ void __launch_bounds__(THREADS)
topk_radix(const float* __restrict__ x, float* __restrict__ vals, int64_t* __restrict__ idx,
           int C, int K) {
  __shared__ uint32_t keys[MAX_C];
  __shared__ int hist[BINS];
  __shared__ uint32_t s_prefix;
  __shared__ int s_need, s_gt, s_eq;
  const float* row = x + static_cast<size_t>(blockIdx.x) * C;
  for (int c = threadIdx.x; c < C; c += THREADS) keys[c] = order_key(row[c]);
  if (threadIdx.x == 0) {
    s_prefix = 0;
    s_need = K;
    s_gt = 0;
    s_eq = 0;
  }
  uint32_t mask = 0;  // the digits of T found so far
  for (int shift = 24; shift >= 0; shift -= 8) {
    for (int b = threadIdx.x; b < BINS; b += THREADS) hist[b] = 0;
    __syncthreads();  // keys, s_prefix and the cleared bins are visible
    const uint32_t prefix = s_prefix;
    for (int c = threadIdx.x; c < C; c += THREADS) {
      const uint32_t k = keys[c];
      if ((k & mask) == prefix) atomicAdd(&hist[(k >> shift) & (BINS - 1)], 1);
    }
    __syncthreads();
    if (threadIdx.x < 32) {
      // Lane l owns bins 8l .. 8l+7; `above` = keys in the bins of lanes > l.
      const int lane = threadIdx.x;
      int own = 0;
#pragma unroll
      for (int i = 0; i < 8; ++i) own += hist[8 * lane + i];
      int suffix = own;  // keys in the bins of lanes >= l
      // Read before the shuffles, which every lane must reach: no lane can write s_need below
      // while another has yet to read it.
      int need = s_need;
#pragma unroll
      for (int o = 1; o < 32; o <<= 1) {
        const int t = __shfl_down_sync(0xffffffffu, suffix, o);
        if (lane + o < 32) suffix += t;
      }
      const int above = suffix - own;
      // need <= keys inside the prefix, so exactly one lane has above < need <= suffix.
      if (above < need && need <= suffix) {
        need -= above;
        for (int b = 8 * lane + 7; b >= 8 * lane; --b) {
          if (hist[b] >= need) {
            s_prefix = prefix | (static_cast<uint32_t>(b) << shift);
            s_need = need;
            break;
          }
          need -= hist[b];
        }
      }
    }
    mask |= static_cast<uint32_t>(BINS - 1) << shift;
    __syncthreads();  // the bin search is done with hist before the next pass clears it
  }
  const uint32_t T = s_prefix;
  const int need = s_need, above = K - need;
  float* v = vals + static_cast<size_t>(blockIdx.x) * K;
  int64_t* ix = idx + static_cast<size_t>(blockIdx.x) * K;
  const int lane = threadIdx.x & 31;
  const uint32_t below = (1u << lane) - 1u;  // lanes under this one
  // Warp-uniform trip count (c0 is the warp's first column), so every lane joins every ballot.
  for (int c0 = threadIdx.x - lane; c0 < C; c0 += THREADS) {
    const int c = c0 + lane;
    const uint32_t k = c < C ? keys[c] : 0u;
    const bool gt = c < C && k > T, eq = c < C && k == T;
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
      v[slot] = key_value(k);
      ix[slot] = c;
    }
  }
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
  topk_radix<<<static_cast<unsigned>(R), THREADS, 0, static_cast<cudaStream_t>(args->stream)>>>(
      data_of<const float>(X), data_of<float>(V), data_of<int64_t>(I), static_cast<int>(C),
      static_cast<int>(K));
  if (cudaGetLastError() != cudaSuccess) {
    set_error(args, "topk_cuda: kernel launch failed");
    return 1;
  }
  return 0;
}
