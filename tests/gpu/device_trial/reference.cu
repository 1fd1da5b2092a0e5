// fp64 GPU reference of axpy_cuda for the device-trial tests: Z = a * X + Y in double, one
// element per thread. Inputs and outputs are device pointers (docs/tasks.md, gpu_reference).
#include <lathe/abi.h>

namespace {

__global__ void axpy64(double a, const float* x, const float* y, double* z, int64_t n) {
  const int64_t i = blockIdx.x * int64_t{blockDim.x} + threadIdx.x;
  if (i < n) z[i] = a * static_cast<double>(x[i]) + static_cast<double>(y[i]);
}

}  // namespace

extern "C" int lathe_reference(const lathe_args* a) {
  const int64_t n = a->inputs[0].shape[0];
  const unsigned blocks = static_cast<unsigned>((n + 255) / 256);
  axpy64<<<blocks ? blocks : 1, 256, 0, static_cast<cudaStream_t>(a->stream)>>>(
      a->scalars[0], static_cast<const float*>(a->inputs[0].data),
      static_cast<const float*>(a->inputs[1].data), static_cast<double*>(a->outputs[0].data), n);
  return cudaGetLastError() == cudaSuccess ? 0 : 1;
}
