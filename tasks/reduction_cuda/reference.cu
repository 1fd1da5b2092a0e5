// Trusted fp64 GPU oracle for reduction_cuda (task.toml: gpu_reference): the function of
// reference.cpp on the device, Y[r] = sum of X[r,:] in double. Tensors are device pointers, Y is
// a float64 device buffer, the work goes on a->stream; nothing is allocated or synchronized here.
// One 256-thread block per row, one coalesced sweep, four independent partial sums per thread,
// then a warp-shuffle tree.
//
// Why the accumulation order is sound. Every float widens exactly to double, so the only error is
// the rounding of the additions. Here each term passes through at most C/1024 + 2 + 8 additions
// (its thread's partial sum of every 1024th element, the merge of the thread's four partials, the
// 8-level tree), so the sum errs by at most about (C/1024 + 10)·2^-53·sum|x|: for the longest rows
// (C = 262148, |x| <= 5 at scale 4 and shift 1) under 4e-8 absolute, 1.5e-13 relative to the
// row sums of ~262148 that the shift produces, against the task's atol 2e-2 and rtol 1e-4.
// reference.cpp adds in another order (four serial partial sums: up to C/4 + 2 additions per
// term), whose bound is ~250 times this one and still below 1e-5 absolute: the two references
// agree far below the tolerance.
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

__global__ void __launch_bounds__(THREADS)
rowsum_f64(const float* __restrict__ x, double* __restrict__ y, int64_t C) {
  __shared__ double sh[WARPS];
  const float* xr = x + static_cast<size_t>(blockIdx.x) * C;
  double s0 = 0.0, s1 = 0.0, s2 = 0.0, s3 = 0.0;
  int64_t c = threadIdx.x;
  for (; c + 3 * THREADS < C; c += 4 * THREADS) {
    s0 += xr[c];
    s1 += xr[c + THREADS];
    s2 += xr[c + 2 * THREADS];
    s3 += xr[c + 3 * THREADS];
  }
  for (; c < C; c += THREADS) s0 += xr[c];
  double v = (s0 + s1) + (s2 + s3);
#pragma unroll
  for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
  if ((threadIdx.x & 31) == 0) sh[threadIdx.x >> 5] = v;
  __syncthreads();
  if (threadIdx.x < 32) {
    v = threadIdx.x < WARPS ? sh[threadIdx.x] : 0.0;
#pragma unroll
    for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
    if (threadIdx.x == 0) y[blockIdx.x] = v;
  }
}

}  // namespace

extern "C" int lathe_reference(const lathe_args* args) {
  if (args->num_inputs != 1 || args->num_outputs != 1) {
    set_error(args, "reduction_cuda GPU reference: expects input X and output Y");
    return 1;
  }
  const DLTensor& X = args->inputs[0];
  const DLTensor& Y = args->outputs[0];
  if (!is_float(X, 2, 32) || !is_float(Y, 1, 64) || Y.shape[0] != X.shape[0]) {
    set_error(args,
              "reduction_cuda GPU reference: X[R,C] float32 and Y[R] float64, contiguous, on the "
              "device (kDLCUDA)");
    return 1;
  }
  const int64_t R = X.shape[0], C = X.shape[1];
  if (R > INT32_MAX) {
    set_error(args, "reduction_cuda GPU reference: more rows than one grid holds");
    return 1;
  }
  if (R == 0) return 0;
  // C = 0 still launches: every row sum is the empty sum 0.
  rowsum_f64<<<static_cast<unsigned>(R), THREADS, 0, static_cast<cudaStream_t>(args->stream)>>>(
      data_of<const float>(X), data_of<double>(Y), C);
  if (cudaGetLastError() != cudaSuccess) {
    set_error(args, "reduction_cuda GPU reference: kernel launch failed");
    return 1;
  }
  return 0;
}
