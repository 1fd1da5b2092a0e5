// One thread per element; the CUDA twin of tests/integration/tasks/axpy/kernels/naive.cpp.
#include <lathe/abi.h>

__global__ void axpy(float a, const float* x, const float* y, float* z, int64_t n) {
  const int64_t i = blockIdx.x * int64_t{blockDim.x} + threadIdx.x;
  if (i < n) z[i] = a * x[i] + y[i];
}

extern "C" int lathe_launch(const lathe_args* args) {
  const int64_t n = args->inputs[0].shape[0];
  axpy<<<static_cast<unsigned>((n + 255) / 256), 256, 0, static_cast<cudaStream_t>(args->stream)>>>(
      static_cast<float>(args->scalars[0]), static_cast<const float*>(args->inputs[0].data),
      static_cast<const float*>(args->inputs[1].data), static_cast<float*>(args->outputs[0].data), n);
  return cudaPeekAtLastError() == cudaSuccess ? 0 : 1;
}
