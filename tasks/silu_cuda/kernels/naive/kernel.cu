// Naive SiLU on the GPU, fp32: one thread per element, y = x / (1 + expf(-x)) with one scalar load
// and one scalar store through plain pointers (no __restrict__, no read-only path, no launch
// bounds, no vector types). Accesses are coalesced (a warp touches 128 contiguous bytes), so what
// it lacks is bytes in flight per thread and the amortization of index arithmetic over several
// elements. The task's baseline and the start of held-out optimize runs.
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

constexpr int THREADS = 256;

__global__ void silu_naive(const float* x, float* y, int64_t n) {
  const int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i < n) y[i] = x[i] / (1.0f + expf(-x[i]));
}

}  // namespace

extern "C" int lathe_launch(const lathe_args* args) {
  if (args->num_inputs != 1 || args->num_outputs != 1) {
    set_error(args, "silu_cuda: expects input X and output Y");
    return 1;
  }
  const DLTensor& X = args->inputs[0];
  const DLTensor& Y = args->outputs[0];
  const int64_t n = elements(X);
  if (!is_f32(X) || !is_f32(Y) || elements(Y) != n) {
    set_error(args, "silu_cuda: X and Y must be contiguous float32 of one size");
    return 1;
  }
  if (n == 0) return 0;
  const int64_t blocks = (n + THREADS - 1) / THREADS;
  if (blocks > INT32_MAX) {
    set_error(args, "silu_cuda: too many elements for one grid of this kernel");
    return 1;
  }
  cudaStream_t stream = static_cast<cudaStream_t>(args->stream);
  silu_naive<<<static_cast<unsigned>(blocks), THREADS, 0, stream>>>(data_of<const float>(X),
                                                                    data_of<float>(Y), n);
  if (cudaGetLastError() != cudaSuccess) {
    set_error(args, "silu_cuda: kernel launch failed");
    return 1;
  }
  return 0;
}
