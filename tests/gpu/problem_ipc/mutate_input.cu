// expect: input_mutated
// kb_scale_relu: right outputs, but each thread zeroes the input element it read.
#include <cuda_runtime.h>
#include <lathe/abi.h>

__global__ void scale_relu(float* x, float* y, float alpha, long n) {
  const long i = blockIdx.x * (long)blockDim.x + threadIdx.x;
  if (i < n) {
    y[i] = fmaxf(x[i], 0.f) * alpha;
    x[i] = 0.f;
  }
}

extern "C" int lathe_launch(const lathe_args* a) {
  const DLTensor& X = a->inputs[0];
  const long n = X.shape[0] * X.shape[1];
  scale_relu<<<(unsigned)((n + 255) / 256), 256, 0, static_cast<cudaStream_t>(a->stream)>>>(
      static_cast<float*>(X.data), static_cast<float*>(a->outputs[0].data),
      static_cast<float>(a->scalars[0]), n);
  return cudaGetLastError() == cudaSuccess ? 0 : 1;
}
