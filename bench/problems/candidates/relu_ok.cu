// expect: correct
// relu.py: one float4 per thread-iteration in a grid-stride loop (n is a multiple of 4 here;
// the tail loop handles any remainder).
#include <cuda_runtime.h>
#include <lathe/abi.h>

__global__ void relu4(const float4* __restrict__ x, float4* __restrict__ y, long n4) {
  for (long i = blockIdx.x * (long)blockDim.x + threadIdx.x; i < n4; i += (long)gridDim.x * blockDim.x) {
    float4 v = x[i];
    v.x = fmaxf(v.x, 0.f), v.y = fmaxf(v.y, 0.f), v.z = fmaxf(v.z, 0.f), v.w = fmaxf(v.w, 0.f);
    y[i] = v;
  }
}
__global__ void relu_tail(const float* x, float* y, long from, long n) {
  long i = from + blockIdx.x * (long)blockDim.x + threadIdx.x;
  if (i < n) y[i] = fmaxf(x[i], 0.f);
}

extern "C" int lathe_launch(const lathe_args* a) {
  const DLTensor& X = a->inputs[0];
  long n = 1;
  for (int d = 0; d < X.ndim; ++d) n *= X.shape[d];
  cudaStream_t s = static_cast<cudaStream_t>(a->stream);
  const long n4 = n / 4;
  relu4<<<132 * 8, 256, 0, s>>>(static_cast<const float4*>(X.data), static_cast<float4*>(a->outputs[0].data), n4);
  if (n % 4) relu_tail<<<1, 4, 0, s>>>(static_cast<const float*>(X.data), static_cast<float*>(a->outputs[0].data), n4 * 4, n);
  return cudaGetLastError() == cudaSuccess ? 0 : 1;
}
