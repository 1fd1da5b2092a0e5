// Trusted fp64 GPU oracle for silu_cuda (task.toml: gpu_reference): the function of
// reference.cpp on the device, y = x / (1 + exp(-x)) with each input widened exactly to double.
// Tensors are device pointers, Y is a float64 device buffer, the work goes on a->stream; nothing
// is allocated or synchronized here. A grid-stride loop over the flat tensor (64-bit indices):
// 12 bytes per element, 1.5 GiB for the timed set, well under a millisecond on an H200.
//
// Why the order of evaluation is sound: there is no accumulation. Each output is one expression
// of its own input, the same expression as reference.cpp's: CUDA's double exp is within 1 ulp
// (CUDA Math API, Double Precision Mathematical Functions) and the host's libm exp within 1 ulp,
// and the addition and division are correctly rounded on both, so the two references differ by a
// few units of 2^-53 relative (~1e-15), against the task's fp32 rtol of 1e-4.
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

bool is_float(const DLTensor& t, uint8_t bits) {
  if (t.ndim != 2 || t.dtype.code != kDLFloat || t.dtype.bits != bits || t.dtype.lanes != 1)
    return false;
  if (t.device.device_type != kDLCUDA) return false;
  return t.strides == nullptr || ((t.shape[1] == 1 || t.strides[1] == 1) &&
                                  (t.shape[0] == 1 || t.strides[0] == t.shape[1]));
}

template <class T>
T* data_of(const DLTensor& t) {
  return reinterpret_cast<T*>(static_cast<char*>(t.data) + t.byte_offset);
}

constexpr int THREADS = 256;

__global__ void __launch_bounds__(THREADS)
silu_f64(const float* __restrict__ x, double* __restrict__ y, int64_t n) {
  const int64_t stride = static_cast<int64_t>(gridDim.x) * THREADS;
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * THREADS + threadIdx.x; i < n; i += stride) {
    const double v = x[i];
    y[i] = v / (1.0 + exp(-v));
  }
}

}  // namespace

extern "C" int lathe_reference(const lathe_args* args) {
  if (args->num_inputs != 1 || args->num_outputs != 1) {
    set_error(args, "silu_cuda GPU reference: expects input X and output Y");
    return 1;
  }
  const DLTensor& X = args->inputs[0];
  const DLTensor& Y = args->outputs[0];
  if (!is_float(X, 32) || !is_float(Y, 64) || Y.shape[0] != X.shape[0] ||
      Y.shape[1] != X.shape[1]) {
    set_error(args,
              "silu_cuda GPU reference: X must be contiguous float32 [R,C] and Y float64 [R,C], "
              "both on the device (kDLCUDA)");
    return 1;
  }
  const int64_t n = X.shape[0] * X.shape[1];
  if (n == 0) return 0;
  // Enough blocks to fill the device many times over; the loop covers the rest.
  const int64_t blocks = (n + THREADS - 1) / THREADS;
  const unsigned grid = static_cast<unsigned>(blocks < 65536 ? blocks : 65536);
  silu_f64<<<grid, THREADS, 0, static_cast<cudaStream_t>(args->stream)>>>(
      data_of<const float>(X), data_of<double>(Y), n);
  if (cudaGetLastError() != cudaSuccess) {
    set_error(args, "silu_cuda GPU reference: kernel launch failed");
    return 1;
  }
  return 0;
}
