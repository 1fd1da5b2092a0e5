// Stage 2 top-k on the GPU: X[R,C] fp32 -> V[R,K] fp32, I[R,K] int64. One 512-thread block per
// row, the row's order keys staged in shared memory (as stage 1), but no sort: a radix select.
//
// Order key: the float's bits with the sign bit set for positives and all bits flipped for
// negatives, so that unsigned order is float order (-0 just below +0; NaN is outside the task's
// contract). The K-th largest key T is found one 8-bit digit at a time, most significant first:
// a pass counts, in a 256-bin shared histogram, the digit of every key whose higher digits equal
// T's digits found so far, and thread 0 walks the bins from the top until the count reaches
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
    if (threadIdx.x == 0) {
      // need <= keys inside the prefix, so some bin reaches it.
      int need = s_need;
      for (int b = BINS - 1; b >= 0; --b) {
        if (hist[b] >= need) {
          s_prefix = prefix | (static_cast<uint32_t>(b) << shift);
          s_need = need;
          break;
        }
        need -= hist[b];
      }
    }
    mask |= static_cast<uint32_t>(BINS - 1) << shift;
    __syncthreads();  // thread 0 is done with hist before the next pass clears it
  }
  const uint32_t T = s_prefix;
  const int need = s_need, above = K - need;
  float* v = vals + static_cast<size_t>(blockIdx.x) * K;
  int64_t* ix = idx + static_cast<size_t>(blockIdx.x) * K;
  for (int c = threadIdx.x; c < C; c += THREADS) {
    const uint32_t k = keys[c];
    int slot = -1;
    if (k > T) {
      slot = atomicAdd(&s_gt, 1);
    } else if (k == T) {
      const int ticket = atomicAdd(&s_eq, 1);
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
