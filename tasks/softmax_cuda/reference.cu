// Trusted fp64 GPU oracle for softmax_cuda (task.toml: gpu_reference): the function of
// reference.cpp on the device. For every row: the max, then exp(x - max) in double written to Y
// and summed in double, then Y scaled by 1 / sum. Tensors are device pointers, Y is a float64
// device buffer, the work goes on a->stream; nothing is allocated or synchronized here. One
// 256-thread block per row; each pass is a coalesced sweep of the row, and the second and third
// sweeps of a row (32 KiB of X, 64 KiB of Y at C = 8192) mostly hit L2.
//
// Why the accumulation order is sound. The max is exact in any order (it selects one input, and
// a float widens exactly to double). x - max rounds by at most 2^-53 relative, which moves
// exp(x - max) by |x - max|·2^-53 relative (< 2e-14 for the differences this task's
// perturbations reach), and exp in double is within 1 ulp. The sum adds C
// positive terms in (0, 1], one of them exactly 1, so it lies in [1, C] and, in any order (here:
// each thread a strided partial sum, then a warp-shuffle tree), errs by at most (C-1)·2^-53
// relative: 9e-13 for C = 8192, against the task's rtol 1e-4. reference.cpp sums in another
// order within the same bound, so the two agree to ~1e-12 relative.
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

bool is_2d(const DLTensor& t, uint8_t bits) {
  if (t.ndim != 2 || t.dtype.code != kDLFloat || t.dtype.bits != bits || t.dtype.lanes != 1)
    return false;
  if (t.device.device_type != kDLCUDA) return false;
  return t.strides == nullptr || (t.strides[1] == 1 && t.strides[0] == t.shape[1]);
}

template <class T>
T* data_of(const DLTensor& t) {
  return reinterpret_cast<T*>(static_cast<char*>(t.data) + t.byte_offset);
}

constexpr int THREADS = 256;
constexpr int WARPS = THREADS / 32;

// Block-wide reductions in double: each warp reduces with shuffles, lane 0 posts to `sh`, one
// barrier, every warp reduces the posts. Each reduction has its own `sh`, so a fast warp's next
// post cannot overwrite what a slow warp is still reading.
__device__ __forceinline__ double block_max(double v, double* sh) {
#pragma unroll
  for (int o = 16; o > 0; o >>= 1) v = fmax(v, __shfl_xor_sync(0xffffffffu, v, o));
  if ((threadIdx.x & 31) == 0) sh[threadIdx.x >> 5] = v;
  __syncthreads();
  v = (threadIdx.x & 31) < WARPS ? sh[threadIdx.x & 31] : -INFINITY;
#pragma unroll
  for (int o = 16; o > 0; o >>= 1) v = fmax(v, __shfl_xor_sync(0xffffffffu, v, o));
  return v;
}

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
softmax_f64(const float* __restrict__ x, double* __restrict__ y, int64_t C) {
  __shared__ double sh_max[WARPS], sh_sum[WARPS];
  const float* xr = x + static_cast<size_t>(blockIdx.x) * C;
  double* yr = y + static_cast<size_t>(blockIdx.x) * C;
  double m = -INFINITY;
  for (int64_t c = threadIdx.x; c < C; c += THREADS) m = fmax(m, static_cast<double>(xr[c]));
  m = block_max(m, sh_max);
  double s = 0.0;
  for (int64_t c = threadIdx.x; c < C; c += THREADS) {
    const double e = exp(static_cast<double>(xr[c]) - m);
    yr[c] = e;
    s += e;
  }
  s = block_sum(s, sh_sum);
  const double inv = 1.0 / s;
  // Each thread rescales the elements it wrote itself: no barrier needed.
  for (int64_t c = threadIdx.x; c < C; c += THREADS) yr[c] *= inv;
}

}  // namespace

extern "C" int lathe_reference(const lathe_args* args) {
  if (args->num_inputs != 1 || args->num_outputs != 1) {
    set_error(args, "softmax_cuda GPU reference: expects input X and output Y");
    return 1;
  }
  const DLTensor& X = args->inputs[0];
  const DLTensor& Y = args->outputs[0];
  if (!is_2d(X, 32) || !is_2d(Y, 64) || X.shape[0] != Y.shape[0] || X.shape[1] != Y.shape[1]) {
    set_error(args,
              "softmax_cuda GPU reference: X must be contiguous 2-D float32 and Y float64 of its "
              "shape, both on the device (kDLCUDA)");
    return 1;
  }
  const int64_t R = X.shape[0], C = X.shape[1];
  if (R > INT32_MAX) {
    set_error(args, "softmax_cuda GPU reference: more rows than one grid holds");
    return 1;
  }
  if (R == 0 || C == 0) return 0;
  softmax_f64<<<static_cast<unsigned>(R), THREADS, 0, static_cast<cudaStream_t>(args->stream)>>>(
      data_of<const float>(X), data_of<double>(Y), C);
  if (cudaGetLastError() != cudaSuccess) {
    set_error(args, "softmax_cuda GPU reference: kernel launch failed");
    return 1;
  }
  return 0;
}
