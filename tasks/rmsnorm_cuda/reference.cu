// Trusted fp64 GPU oracle for rmsnorm_cuda (task.toml: gpu_reference): the function of
// reference.cpp on the device. For every row: the sum of squares in double, inv =
// 1 / sqrt(sum / C + eps), then y = x * inv * w, all in double. Tensors are device pointers, Y is
// a float64 device buffer, eps comes from a->scalars (host memory, as for the CPU reference), the
// work goes on a->stream; nothing is allocated or synchronized here. One 256-thread block per
// row, two coalesced sweeps of the row (the second mostly from L2).
//
// Why the accumulation order is sound. x widens exactly to double and x*x (at most 48
// significant bits) is exact, so the only rounding before the division is in the sum of C
// non-negative terms, which in any order (here: a strided partial sum per thread, then a
// warp-shuffle tree) errs by at most (C-1)·2^-53 relative: 9e-13 for C = 8192, against the task's
// rtol 1e-4 and nerr 1e-5. Division and sqrt in double are correctly rounded on the device as on
// the host, and the output expression is the CPU reference's, (x * inv) * w, so the two references
// differ only by the order of that sum: ~1e-12 relative.
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

bool is_float(const DLTensor& t, int ndim, uint8_t bits) {
  if (t.ndim != ndim || t.dtype.code != kDLFloat || t.dtype.bits != bits || t.dtype.lanes != 1)
    return false;
  if (t.device.device_type != kDLCUDA) return false;
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

constexpr int THREADS = 256;
constexpr int WARPS = THREADS / 32;

__device__ __forceinline__ double block_sum(double v, double* sh) {
#pragma unroll
  for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
  if ((threadIdx.x & 31) == 0) sh[threadIdx.x >> 5] = v;
  __syncthreads();
  v = (threadIdx.x & 31) < WARPS ? sh[threadIdx.x & 31] : 0.0;
#pragma unroll
  for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
  return v;
}

__global__ void __launch_bounds__(THREADS)
rmsnorm_f64(const float* __restrict__ x, const float* __restrict__ w, double* __restrict__ y,
            int64_t C, double eps) {
  __shared__ double sh[WARPS];
  const float* xr = x + static_cast<size_t>(blockIdx.x) * C;
  double* yr = y + static_cast<size_t>(blockIdx.x) * C;
  double ss = 0.0;
  for (int64_t c = threadIdx.x; c < C; c += THREADS) {
    const double v = xr[c];
    ss = fma(v, v, ss);  // v*v is exact, so this rounds as ss + v*v does
  }
  ss = block_sum(ss, sh);
  const double inv = 1.0 / sqrt(ss / static_cast<double>(C) + eps);
  for (int64_t c = threadIdx.x; c < C; c += THREADS)
    yr[c] = static_cast<double>(xr[c]) * inv * static_cast<double>(w[c]);
}

}  // namespace

extern "C" int lathe_reference(const lathe_args* args) {
  if (args->num_inputs != 2 || args->num_outputs != 1 || args->num_scalars != 1) {
    set_error(args, "rmsnorm_cuda GPU reference: expects inputs X, w, scalar eps and output Y");
    return 1;
  }
  const DLTensor& X = args->inputs[0];
  const DLTensor& W = args->inputs[1];
  const DLTensor& Y = args->outputs[0];
  if (!is_float(X, 2, 32) || !is_float(W, 1, 32) || !is_float(Y, 2, 64) ||
      W.shape[0] != X.shape[1] || Y.shape[0] != X.shape[0] || Y.shape[1] != X.shape[1]) {
    set_error(args,
              "rmsnorm_cuda GPU reference: X[R,C], w[C] float32, Y[R,C] float64, contiguous, "
              "on the device (kDLCUDA)");
    return 1;
  }
  const int64_t R = X.shape[0], C = X.shape[1];
  if (R > INT32_MAX) {
    set_error(args, "rmsnorm_cuda GPU reference: more rows than one grid holds");
    return 1;
  }
  if (R == 0 || C == 0) return 0;
  rmsnorm_f64<<<static_cast<unsigned>(R), THREADS, 0, static_cast<cudaStream_t>(args->stream)>>>(
      data_of<const float>(X), data_of<const float>(W), data_of<double>(Y), C, args->scalars[0]);
  if (cudaGetLastError() != cudaSuccess) {
    set_error(args, "rmsnorm_cuda GPU reference: kernel launch failed");
    return 1;
  }
  return 0;
}
