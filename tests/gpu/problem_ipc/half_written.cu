// expect: unwritten_output
// kb_scale_relu: only the first half of the output is written.
#include <cuda_runtime.h>
#include <lathe/abi.h>

__global__ void scale_relu(const float* x, float* y, float alpha, long n) {
  const long i = blockIdx.x * (long)blockDim.x + threadIdx.x;
  if (i < n / 2) y[i] = fmaxf(x[i], 0.f) * alpha;
}

extern "C" int lathe_launch(const lathe_args* a) {
  const DLTensor& X = a->inputs[0];
  const long n = X.shape[0] * X.shape[1];
  scale_relu<<<(unsigned)((n + 255) / 256), 256, 0, static_cast<cudaStream_t>(a->stream)>>>(
      static_cast<const float*>(X.data), static_cast<float*>(a->outputs[0].data),
      static_cast<float>(a->scalars[0]), n);
  return cudaGetLastError() == cudaSuccess ? 0 : 1;
}
