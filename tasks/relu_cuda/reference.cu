// Trusted fp64 GPU oracle for relu_cuda (task.toml: gpu_reference): the function of
// reference.cpp on the device, Y = max(X, 0) with each input widened exactly to double; NaN
// propagates as in torch.relu. Tensors are device pointers, Y is a float64 device buffer, the
// work goes on a->stream; nothing is allocated or synchronized here. A grid-stride loop over the
// flat tensor (64-bit indices: the timed set has 1.6 G elements): 12 bytes per element, ~20 GB
// for the timed set, a few milliseconds on an H200.
//
// Why the accumulation order is sound: there is no accumulation. Each output is its input or
// zero, exactly, in any order; this reference and reference.cpp agree bit for bit.
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

bool contiguous(const DLTensor& t) {
  if (t.strides == nullptr) return true;
  int64_t expect = 1;
  for (int d = t.ndim - 1; d >= 0; --d) {
    if (t.shape[d] != 1 && t.strides[d] != expect) return false;
    expect *= t.shape[d];
  }
  return true;
}

template <class T>
T* data_of(const DLTensor& t) {
  return reinterpret_cast<T*>(static_cast<char*>(t.data) + t.byte_offset);
}

constexpr int THREADS = 256;

__global__ void __launch_bounds__(THREADS)
relu_f64(const float* __restrict__ x, double* __restrict__ y, int64_t n) {
  const int64_t stride = static_cast<int64_t>(gridDim.x) * THREADS;
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * THREADS + threadIdx.x; i < n; i += stride) {
    const double v = x[i];
    y[i] = v > 0.0 ? v : (v == v ? 0.0 : v);  // v != v: NaN, kept
  }
}

}  // namespace

extern "C" int lathe_reference(const lathe_args* args) {
  if (args->num_inputs != 1 || args->num_outputs != 1) {
    set_error(args, "relu_cuda GPU reference: expects input X and output Y");
    return 1;
  }
  const DLTensor& X = args->inputs[0];
  const DLTensor& Y = args->outputs[0];
  if (X.ndim != Y.ndim || X.dtype.code != kDLFloat || X.dtype.bits != 32 || X.dtype.lanes != 1 ||
      Y.dtype.code != kDLFloat || Y.dtype.bits != 64 || Y.dtype.lanes != 1 ||
      X.device.device_type != kDLCUDA || Y.device.device_type != kDLCUDA || !contiguous(X) ||
      !contiguous(Y)) {
    set_error(args,
              "relu_cuda GPU reference: X must be contiguous float32 and Y float64 of its shape, "
              "both on the device (kDLCUDA)");
    return 1;
  }
  int64_t n = 1;
  for (int d = 0; d < X.ndim; ++d) {
    if (X.shape[d] != Y.shape[d]) {
      set_error(args, "relu_cuda GPU reference: X and Y shapes differ");
      return 1;
    }
    n *= X.shape[d];
  }
  if (n == 0) return 0;
  // Enough blocks to fill the device many times over; the loop covers the rest.
  const int64_t blocks = (n + THREADS - 1) / THREADS;
  const unsigned grid = static_cast<unsigned>(blocks < 65536 ? blocks : 65536);
  relu_f64<<<grid, THREADS, 0, static_cast<cudaStream_t>(args->stream)>>>(
      data_of<const float>(X), data_of<double>(Y), n);
  if (cudaGetLastError() != cudaSuccess) {
    set_error(args, "relu_cuda GPU reference: kernel launch failed");
    return 1;
  }
  return 0;
}
