// expect: correct
// softmax.py: one 256-thread block per row; max, then the sum of exp(x - max), then the quotient.
#include <cuda_runtime.h>
#include <lathe/abi.h>

__device__ float block_reduce(float v, bool is_max) {
  __shared__ float part[32];
  for (int o = 16; o > 0; o >>= 1) {
    float w = __shfl_xor_sync(0xffffffffu, v, o);
    v = is_max ? fmaxf(v, w) : v + w;
  }
  if ((threadIdx.x & 31) == 0) part[threadIdx.x >> 5] = v;
  __syncthreads();
  if (threadIdx.x < 32) {
    v = threadIdx.x < blockDim.x / 32 ? part[threadIdx.x] : (is_max ? -INFINITY : 0.f);
    for (int o = 16; o > 0; o >>= 1) {
      float w = __shfl_xor_sync(0xffffffffu, v, o);
      v = is_max ? fmaxf(v, w) : v + w;
    }
    if (threadIdx.x == 0) part[0] = v;
  }
  __syncthreads();
  v = part[0];
  __syncthreads();
  return v;
}

__global__ void softmax_rows(const float* x, float* y, int cols) {
  const float* r = x + (long)blockIdx.x * cols;
  float* o = y + (long)blockIdx.x * cols;
  float m = -INFINITY;
  for (int c = threadIdx.x; c < cols; c += blockDim.x) m = fmaxf(m, r[c]);
  m = block_reduce(m, true);
  float s = 0.f;
  for (int c = threadIdx.x; c < cols; c += blockDim.x) s += expf(r[c] - m);
  s = block_reduce(s, false);
  const float inv = 1.f / s;
  for (int c = threadIdx.x; c < cols; c += blockDim.x) o[c] = expf(r[c] - m) * inv;
}

extern "C" int lathe_launch(const lathe_args* a) {
  const DLTensor& X = a->inputs[0];
  softmax_rows<<<(unsigned)X.shape[0], 256, 0, static_cast<cudaStream_t>(a->stream)>>>(
      static_cast<const float*>(X.data), static_cast<float*>(a->outputs[0].data), (int)X.shape[1]);
  return cudaGetLastError() == cudaSuccess ? 0 : 1;
}
