// The probe's copy kernel: cudaMemcpy between device buffers reads well below what a kernel
// moves on an H200 (2.76 against ~4.2 TB/s), and a copy ceiling that low would put roofline
// fractions of memory-bound kernels above 100%. 16-byte loads, four in flight per thread.
#include <cuda_runtime.h>

#include <cstddef>
#include <cstdint>

namespace {

__global__ void lathe_probe_copy(const float4* __restrict__ src, float4* __restrict__ dst,
                                 size_t n) {
  const size_t stride = size_t{gridDim.x} * blockDim.x;
  size_t i = size_t{blockIdx.x} * blockDim.x + threadIdx.x;
  for (; i + 3 * stride < n; i += 4 * stride) {
    const float4 a = src[i], b = src[i + stride], c = src[i + 2 * stride], d = src[i + 3 * stride];
    dst[i] = a;
    dst[i + stride] = b;
    dst[i + 2 * stride] = c;
    dst[i + 3 * stride] = d;
  }
  for (; i < n; i += stride) dst[i] = src[i];
}

}  // namespace

// Copies bytes / 16 float4 (both buffers 16-byte aligned, bytes a multiple of 16) on `stream`.
cudaError_t probe_copy(const void* src, void* dst, size_t bytes, int sms, cudaStream_t stream) {
  const size_t n = bytes / sizeof(float4);
  lathe_probe_copy<<<static_cast<unsigned>(sms > 0 ? sms * 8 : 1024), 512, 0, stream>>>(
      static_cast<const float4*>(src), static_cast<float4*>(dst), n);
  return cudaGetLastError();
}
