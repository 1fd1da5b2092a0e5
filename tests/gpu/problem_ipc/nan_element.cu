// expect: nan_or_inf
// kb_scale_relu: right everywhere but element [1,2], which is NaN.
#include <cuda_runtime.h>
#include <lathe/abi.h>

__global__ void scale_relu(const float* x, float* y, float alpha, long n, long cols) {
  const long i = blockIdx.x * (long)blockDim.x + threadIdx.x;
  if (i < n) y[i] = i == cols + 2 ? __int_as_float(0x7fc00000) : fmaxf(x[i], 0.f) * alpha;
}

extern "C" int lathe_launch(const lathe_args* a) {
  const DLTensor& X = a->inputs[0];
  const long n = X.shape[0] * X.shape[1];
  scale_relu<<<(unsigned)((n + 255) / 256), 256, 0, static_cast<cudaStream_t>(a->stream)>>>(
      static_cast<const float*>(X.data), static_cast<float*>(a->outputs[0].data),
      static_cast<float>(a->scalars[0]), n, X.shape[1]);
  return cudaGetLastError() == cudaSuccess ? 0 : 1;
}
