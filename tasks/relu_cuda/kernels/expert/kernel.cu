// Expert ReLU on the GPU, fp32: 16-byte vector accesses with streaming hints, several loads in
// flight per thread, a scalar tail. The aim is the copy roofline (8 bytes per element; >= 85% of
// the device-to-device copy bandwidth, 4.2 TB/s on an H200 per PROTOCOL.md).
//
// Vector path (X and Y 16-byte aligned, which the ABI's 256-byte alignment gives): the flat
// tensor is n4 = n / 4 float4. A block of 256 threads covers a chunk of 256 x U = 1024 float4
// (16 KiB); thread t loads float4 t, t + 256, t + 512, t + 768 of its chunk (each warp access is
// 512 contiguous bytes) with all U loads issued before the first store, so 64 bytes per thread,
// 128 KiB per SM at 8 resident blocks, are in flight: several times the HBM latency-bandwidth
// product per SM (~4.8 TB/s x ~1 us / 132 SMs ~ 36 KiB), which a streaming kernel needs to reach
// the bandwidth ceiling. Loads and stores carry the streaming hint (.cs, evict first): every byte
// is touched once, and the timed tensors are ~100x the L2. The n % 4 (<= 3) leftover elements are
// done by the first threads of block 0 with scalar accesses.
// Fallback (unaligned pointers, never for lathe's tensors): the same chunking with scalar accesses.
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

__device__ __forceinline__ float4 relu4(float4 v) {
  return make_float4(fmaxf(v.x, 0.0f), fmaxf(v.y, 0.0f), fmaxf(v.z, 0.0f), fmaxf(v.w, 0.0f));
}

__global__ void __launch_bounds__(THREADS)
relu_vec(const float4* __restrict__ x, float4* __restrict__ y, int64_t n4,
         const float* __restrict__ xt, float* __restrict__ yt, int tail) {
  const int64_t base = static_cast<int64_t>(blockIdx.x) * (THREADS * U) + threadIdx.x;
  if (base + (U - 1) * THREADS < n4) {  // a whole chunk: no bounds test per access
    float4 v[U];
#pragma unroll
    for (int u = 0; u < U; ++u) v[u] = __ldcs(x + base + u * THREADS);
#pragma unroll
    for (int u = 0; u < U; ++u) __stcs(y + base + u * THREADS, relu4(v[u]));
  } else {  // the last, partial chunk
#pragma unroll
    for (int u = 0; u < U; ++u) {
      const int64_t i = base + u * THREADS;
      if (i < n4) __stcs(y + i, relu4(__ldcs(x + i)));
    }
  }
  if (blockIdx.x == 0 && threadIdx.x < tail) yt[threadIdx.x] = fmaxf(xt[threadIdx.x], 0.0f);
}

__global__ void __launch_bounds__(THREADS)
relu_scalar(const float* __restrict__ x, float* __restrict__ y, int64_t n) {
  const int64_t base = static_cast<int64_t>(blockIdx.x) * (THREADS * U) + threadIdx.x;
#pragma unroll
  for (int u = 0; u < U; ++u) {
    const int64_t i = base + u * THREADS;
    if (i < n) y[i] = fmaxf(x[i], 0.0f);
  }
}

}  // namespace

extern "C" int lathe_launch(const lathe_args* args) {
  if (args->num_inputs != 1 || args->num_outputs != 1) {
    set_error(args, "relu_cuda: expects input X and output Y");
    return 1;
  }
  const DLTensor& X = args->inputs[0];
  const DLTensor& Y = args->outputs[0];
  const int64_t n = elements(X);
  if (!is_f32(X) || !is_f32(Y) || elements(Y) != n) {
    set_error(args, "relu_cuda: X and Y must be contiguous float32 of one size");
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
    set_error(args, "relu_cuda: too many elements for one grid of this kernel");
    return 1;
  }
  if (aligned) {
    const int64_t n4 = n / 4;
    relu_vec<<<static_cast<unsigned>(blocks), THREADS, 0, stream>>>(
        reinterpret_cast<const float4*>(x), reinterpret_cast<float4*>(y), n4, x + 4 * n4,
        y + 4 * n4, static_cast<int>(n - 4 * n4));
  } else {
    relu_scalar<<<static_cast<unsigned>(blocks), THREADS, 0, stream>>>(x, y, n);
  }
  if (cudaGetLastError() != cudaSuccess) {
    set_error(args, "relu_cuda: kernel launch failed");
    return 1;
  }
  return 0;
}
