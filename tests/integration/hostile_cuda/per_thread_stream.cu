// expect: forbidden
// Computes on the per-thread default stream, a side stream that needs no cudaStreamCreate.
#include <lathe/abi.h>
__global__ void axpy(float a, const float* x, const float* y, float* z, int64_t n) {
  const int64_t i = blockIdx.x * int64_t{blockDim.x} + threadIdx.x;
  if (i < n) z[i] = a * x[i] + y[i];
}
extern "C" int lathe_launch(const lathe_args* args) {
  const int64_t n = args->inputs[0].shape[0];
  axpy<<<(n + 255) / 256, 256, 0, cudaStreamPerThread>>>(
      2.5f, (const float*)args->inputs[0].data, (const float*)args->inputs[1].data,
      (float*)args->outputs[0].data, n);
  return 0;
}
