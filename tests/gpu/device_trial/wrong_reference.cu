// A GPU reference that is wrong by one part in 1e7: the cross-check against the CPU reference
// must refuse it before any kernel is judged by it.
#include <lathe/abi.h>

namespace {

__global__ void axpy64(double a, const float* x, const float* y, double* z, int64_t n) {
  const int64_t i = blockIdx.x * int64_t{blockDim.x} + threadIdx.x;
  if (i < n) z[i] = (a * static_cast<double>(x[i]) + static_cast<double>(y[i])) * (1.0 + 1e-7);
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
