// Stage 1 top-k on the GPU: X[R,C] fp32 -> V[R,K] fp32, I[R,K] int64. One 512-thread block per
// row; the row is read from global memory once, into shared memory, and sorted there.
//
// Each element becomes one 64-bit sort key: the high word is the float's order key (its bits
// with the sign bit set for positives and all bits flipped for negatives, so that unsigned order
// is float order, -0 just below +0), the low word is ~column, so that among equal values the
// lower column sorts first and every key is distinct. The row is padded to P = the next power of
// two >= C with key 0, below every real key (the smallest real high word is -inf's 0x007fffff;
// NaN is outside the task's contract). A bitonic network sorts the P keys descending
// (log2(P)*(log2(P)+1)/2 compare-exchange steps, one barrier each: 78 for P = 4096); the first K
// are the answer, ties at the K-th value resolved by column. Shared memory: 8*P bytes, at most
// 32 KiB (C <= 4096, the task's contract).
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

// Unsigned order key of a float: larger float, larger key (NaN aside).
__device__ __forceinline__ uint32_t order_key(float f) {
  const uint32_t u = __float_as_uint(f);
  return (u & 0x80000000u) ? ~u : (u | 0x80000000u);
}

__device__ __forceinline__ float key_value(uint32_t k) {
  return __uint_as_float((k & 0x80000000u) ? (k & 0x7fffffffu) : ~k);
}

__global__ void __launch_bounds__(THREADS)
topk_bitonic(const float* __restrict__ x, float* __restrict__ vals, int64_t* __restrict__ idx,
             int C, int K, int P) {
  __shared__ unsigned long long s[MAX_C];
  const float* row = x + static_cast<size_t>(blockIdx.x) * C;
  for (int i = threadIdx.x; i < P; i += THREADS)
    s[i] = i < C ? (static_cast<unsigned long long>(order_key(row[i])) << 32) |
                       static_cast<uint32_t>(~static_cast<uint32_t>(i))
                 : 0ull;
  for (int size = 2; size <= P; size <<= 1) {
    for (int stride = size >> 1; stride > 0; stride >>= 1) {
      __syncthreads();
      for (int t = threadIdx.x; t < P / 2; t += THREADS) {
        const int i = 2 * t - (t & (stride - 1));  // lower element of the t-th pair
        const int j = i + stride;
        const bool desc = (i & size) == 0;  // every run of the last merge (size = P) descends
        const unsigned long long a = s[i], b = s[j];
        if ((a < b) == desc) {
          s[i] = b;
          s[j] = a;
        }
      }
    }
  }
  __syncthreads();
  float* v = vals + static_cast<size_t>(blockIdx.x) * K;
  int64_t* ix = idx + static_cast<size_t>(blockIdx.x) * K;
  for (int j = threadIdx.x; j < K; j += THREADS) {
    const unsigned long long key = s[j];
    v[j] = key_value(static_cast<uint32_t>(key >> 32));
    ix[j] = static_cast<int64_t>(~static_cast<uint32_t>(key));
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
  int P = 1;
  while (P < C) P <<= 1;
  topk_bitonic<<<static_cast<unsigned>(R), THREADS, 0, static_cast<cudaStream_t>(args->stream)>>>(
      data_of<const float>(X), data_of<float>(V), data_of<int64_t>(I), static_cast<int>(C),
      static_cast<int>(K), P);
  if (cudaGetLastError() != cudaSuccess) {
    set_error(args, "topk_cuda: kernel launch failed");
    return 1;
  }
  return 0;
}
