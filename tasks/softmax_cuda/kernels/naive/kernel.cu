// Naive row softmax on the GPU, fp32: one thread per row, three plain passes over its row in global
// memory (max; exp(x - max) written to Y and summed; Y divided by the sum). Neighbouring threads
// walk rows C floats apart, so a warp's accesses are never coalesced, nothing is vectorized, and
// only R threads exist (8192 for the timed set: a few warps per SM). What a lineage starts from.
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

__global__ void softmax_naive(const float* __restrict__ x, float* __restrict__ y, int R, int C) {
  const int r = blockIdx.x * blockDim.x + threadIdx.x;
  if (r >= R) return;
  const float* xr = x + static_cast<size_t>(r) * C;
  float* yr = y + static_cast<size_t>(r) * C;
  float m = -INFINITY;
  for (int c = 0; c < C; ++c) m = fmaxf(m, xr[c]);
  float s = 0.0f;
  for (int c = 0; c < C; ++c) {
    const float e = expf(xr[c] - m);
    yr[c] = e;
    s += e;
  }
  for (int c = 0; c < C; ++c) yr[c] = yr[c] / s;
}

}  // namespace

extern "C" int lathe_launch(const lathe_args* args) {
  if (args->num_inputs != 1 || args->num_outputs != 1) {
    set_error(args, "softmax_cuda: expects input X and output Y");
    return 1;
  }
  const DLTensor& X = args->inputs[0];
  const DLTensor& Y = args->outputs[0];
  if (!is_f32(X, 2) || !is_f32(Y, 2) || X.shape[0] != Y.shape[0] || X.shape[1] != Y.shape[1]) {
    set_error(args, "softmax_cuda: X and Y must be contiguous 2-D float32 of the same shape");
    return 1;
  }
  const int64_t R = X.shape[0], C = X.shape[1];
  if (R > INT32_MAX || C > INT32_MAX) {
    set_error(args, "softmax_cuda: shape too large for this kernel's 32-bit indices");
    return 1;
  }
  if (R == 0 || C == 0) return 0;
  const float* x = data_of<const float>(X);
  float* y = data_of<float>(Y);
  cudaStream_t stream = static_cast<cudaStream_t>(args->stream);
  const int threads = 128;
  softmax_naive<<<static_cast<unsigned>((R + threads - 1) / threads), threads, 0, stream>>>(
      x, y, static_cast<int>(R), static_cast<int>(C));
  if (cudaGetLastError() != cudaSuccess) {
    set_error(args, "softmax_cuda: kernel launch failed");
    return 1;
  }
  return 0;
}
