// expect: wrong
// relu.py with an off-by-one-row bound: the last row is never written.
#include <cuda_runtime.h>
#include <lathe/abi.h>

__global__ void relu(const float* x, float* y, long n) {
  long i = blockIdx.x * (long)blockDim.x + threadIdx.x;
  if (i < n) y[i] = fmaxf(x[i], 0.f);
}

extern "C" int lathe_launch(const lathe_args* a) {
  const DLTensor& X = a->inputs[0];
  const long n = X.shape[0] * X.shape[1] - X.shape[1];
  relu<<<(n + 255) / 256, 256, 0, static_cast<cudaStream_t>(a->stream)>>>(
      static_cast<const float*>(X.data), static_cast<float*>(a->outputs[0].data), n);
  return cudaGetLastError() == cudaSuccess ? 0 : 1;
}
