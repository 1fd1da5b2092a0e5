// The "trivial CUDA candidate" of KernelBench's level1/19 (ReLU), in lathe's ABI: what a model
// writes on its first try there, a grid-stride loop over the flat tensor with one element per
// thread per trip and fmaxf, 256-thread blocks, as many blocks as cover the tensor once (so each
// thread makes one trip; the loop only matters past the grid limit). It exists to compare
// lathe's measurement of one kernel with KernelBench's (bench/kernelbench_relu.py); it differs
// from `naive` only in the loop and in fmaxf against the comparison.
#include <cuda_runtime.h>
#include <lathe/abi.h>
#include <stddef.h>
#include <stdint.h>

namespace {

void set_error(const lathe_args* a, const char* msg) {
  if (a->error == nullptr || a->error_bytes == 0) return;
  size_t i = 0;
  for (; msg[i] != '\0' && i + 1 < a->error_bytes; ++i) a->error[i] = msg[i];
  a->error[i] = '\0';
}

bool is_f32(const DLTensor& t) {
  if (t.dtype.code != kDLFloat || t.dtype.bits != 32 || t.dtype.lanes != 1) return false;
  if (t.strides == nullptr) return true;
  int64_t expect = 1;
  for (int d = t.ndim - 1; d >= 0; --d) {
    if (t.shape[d] != 1 && t.strides[d] != expect) return false;
    expect *= t.shape[d];
  }
  return true;
}

int64_t elements(const DLTensor& t) {
  int64_t n = 1;
  for (int d = 0; d < t.ndim; ++d) n *= t.shape[d];
  return n;
}

template <class T>
T* data_of(const DLTensor& t) {
  return reinterpret_cast<T*>(static_cast<char*>(t.data) + t.byte_offset);
}

__global__ void relu_trivial(const float* __restrict__ x, float* __restrict__ y, int64_t n) {
  const int64_t stride = static_cast<int64_t>(gridDim.x) * blockDim.x;
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += stride)
    y[i] = fmaxf(x[i], 0.0f);
}

}  // namespace

extern "C" int lathe_launch(const lathe_args* args) {
  if (args->num_inputs != 1 || args->num_outputs != 1) {
    set_error(args, "relu_cuda: expects input X and output Y");
    return 1;
  }
  const DLTensor& X = args->inputs[0];
  const DLTensor& Y = args->outputs[0];
  const int64_t n = elements(X);
  if (!is_f32(X) || !is_f32(Y) || elements(Y) != n) {
    set_error(args, "relu_cuda: X and Y must be contiguous float32 of one size");
    return 1;
  }
  if (n == 0) return 0;
  const int threads = 256;
  const int64_t blocks = (n + threads - 1) / threads;
  const unsigned grid = static_cast<unsigned>(blocks < INT32_MAX ? blocks : INT32_MAX);
  relu_trivial<<<grid, threads, 0, static_cast<cudaStream_t>(args->stream)>>>(
      data_of<const float>(X), data_of<float>(Y), n);
  if (cudaGetLastError() != cudaSuccess) {
    set_error(args, "relu_cuda: kernel launch failed");
    return 1;
  }
  return 0;
}
