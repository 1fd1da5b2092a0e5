// Naive RMS norm on the GPU, fp32: one thread per row, two plain passes over its row in global
// memory (sum of squares; y = x / sqrt(mean + eps) * w). Neighbouring threads walk rows C floats
// apart, so no access is coalesced or vectorized, and only R threads exist. The starting point.
#include <cuda_runtime.h>
#include <lathe/abi.h>
#include <math.h>
#include <stddef.h>
#include <stdint.h>

namespace {

void set_error(const lathe_args* a, const char* msg) {
  if (a->error == nullptr || a->error_bytes == 0) return;
  size_t i = 0;
  for (; msg[i] != '\0' && i + 1 < a->error_bytes; ++i) a->error[i] = msg[i];
  a->error[i] = '\0';
}

bool is_f32(const DLTensor& t, int ndim) {
  if (t.ndim != ndim || t.dtype.code != kDLFloat || t.dtype.bits != 32 || t.dtype.lanes != 1)
    return false;
  if (t.strides == nullptr) return true;
  int64_t expect = 1;
  for (int d = ndim - 1; d >= 0; --d) {
    if (t.shape[d] != 1 && t.strides[d] != expect) return false;
    expect *= t.shape[d];
  }
  return true;
}

template <class T>
T* data_of(const DLTensor& t) {
  return reinterpret_cast<T*>(static_cast<char*>(t.data) + t.byte_offset);
}

__global__ void rmsnorm_naive(const float* __restrict__ x, const float* __restrict__ w,
                              float* __restrict__ y, int R, int C, float eps) {
  const int r = blockIdx.x * blockDim.x + threadIdx.x;
  if (r >= R) return;
  const float* xr = x + static_cast<size_t>(r) * C;
  float* yr = y + static_cast<size_t>(r) * C;
  float ss = 0.0f;
  for (int c = 0; c < C; ++c) ss += xr[c] * xr[c];
  const float d = sqrtf(ss / static_cast<float>(C) + eps);
  for (int c = 0; c < C; ++c) yr[c] = xr[c] / d * w[c];
}

}  // namespace

extern "C" int lathe_launch(const lathe_args* args) {
  if (args->num_inputs != 2 || args->num_outputs != 1 || args->num_scalars != 1) {
    set_error(args, "rmsnorm_cuda: expects inputs X, w, scalar eps and output Y");
    return 1;
  }
  const DLTensor& X = args->inputs[0];
  const DLTensor& W = args->inputs[1];
  const DLTensor& Y = args->outputs[0];
  if (!is_f32(X, 2) || !is_f32(W, 1) || !is_f32(Y, 2) || W.shape[0] != X.shape[1] ||
      Y.shape[0] != X.shape[0] || Y.shape[1] != X.shape[1]) {
    set_error(args, "rmsnorm_cuda: X[R,C], w[C] and Y[R,C] must be contiguous float32");
    return 1;
  }
  const int64_t R = X.shape[0], C = X.shape[1];
  if (R > INT32_MAX || C > INT32_MAX) {
    set_error(args, "rmsnorm_cuda: shape too large for this kernel's 32-bit indices");
    return 1;
  }
  if (R == 0 || C == 0) return 0;
  const float* x = data_of<const float>(X);
  const float* w = data_of<const float>(W);
  float* y = data_of<float>(Y);
  const float eps = static_cast<float>(args->scalars[0]);
  cudaStream_t stream = static_cast<cudaStream_t>(args->stream);
  const int threads = 128;
  rmsnorm_naive<<<static_cast<unsigned>((R + threads - 1) / threads), threads, 0, stream>>>(
      x, w, y, static_cast<int>(R), static_cast<int>(C), eps);
  if (cudaGetLastError() != cudaSuccess) {
    set_error(args, "rmsnorm_cuda: kernel launch failed");
    return 1;
  }
  return 0;
}
