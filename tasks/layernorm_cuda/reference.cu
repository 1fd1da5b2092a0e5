// Trusted fp64 GPU oracle for layernorm_cuda (task.toml: gpu_reference): the function of
// reference.cpp on the device. For every row: the mean in double, the biased variance as the mean
// of squared deviations from it in double, rstd = 1 / sqrt(var + eps), then
// y = (x - mean) * rstd * gamma + beta, all in double. Tensors are device pointers, Y is a float64
// device buffer, eps comes from a->scalars (host memory, as for the CPU reference), the work goes
// on a->stream; nothing is allocated or synchronized here. One 256-thread block per row, three
// coalesced sweeps of the row (the second and third mostly from L2).
//
// Why the summation order is sound. x widens exactly to double. The row sum (a strided partial sum
// per thread, then a warp-shuffle tree, where reference.cpp sums serially) errs in any order by at
// most (C-1)·2^-53·sum|x|: for C = 4099 and the task's largest shift (mean 1, spread 0.25) that
// is ~2e-12 of the row's standard deviation. The variance is a sum of C non-negative terms d*d,
// each within 3·2^-53 relative, so any order errs by at most ~(C+2)·2^-53 relative (~5e-13); an
// error δ in the mean changes the sum of squared deviations only by C·δ² (the first-order term
// vanishes). The output expression is the CPU reference's, ((x - mean) * rstd) * gamma + beta,
// with correctly rounded sqrt and division on both sides, so the two references differ by ~1e-12
// of the output's terms, against the task's rtol = 1e-4 and nerr = 1e-5. (Measured on an H200:
// element-wise at most 1e-8 relative, at outputs where gamma * xhat + beta cancels to near zero.)
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

// The sum over the block, returned to every thread. `sh` is reused by the next call, so the
// barrier at the end keeps a fast warp from overwriting partials another warp still reads.
__device__ __forceinline__ double block_sum(double v, double* sh) {
#pragma unroll
  for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
  if ((threadIdx.x & 31) == 0) sh[threadIdx.x >> 5] = v;
  __syncthreads();
  v = (threadIdx.x & 31) < WARPS ? sh[threadIdx.x & 31] : 0.0;
#pragma unroll
  for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
  __syncthreads();
  return v;
}

__global__ void __launch_bounds__(THREADS)
layernorm_f64(const float* __restrict__ x, const float* __restrict__ g,
              const float* __restrict__ b, double* __restrict__ y, int64_t C, double eps) {
  __shared__ double sh[WARPS];
  const float* xr = x + static_cast<size_t>(blockIdx.x) * C;
  double* yr = y + static_cast<size_t>(blockIdx.x) * C;
  double s = 0.0;
  for (int64_t c = threadIdx.x; c < C; c += THREADS) s += static_cast<double>(xr[c]);
  const double mean = block_sum(s, sh) / static_cast<double>(C);
  double ss = 0.0;
  for (int64_t c = threadIdx.x; c < C; c += THREADS) {
    const double d = static_cast<double>(xr[c]) - mean;
    ss += d * d;
  }
  const double var = block_sum(ss, sh) / static_cast<double>(C);
  const double rstd = 1.0 / sqrt(var + eps);
  for (int64_t c = threadIdx.x; c < C; c += THREADS)
    yr[c] = (static_cast<double>(xr[c]) - mean) * rstd * static_cast<double>(g[c]) +
            static_cast<double>(b[c]);
}

}  // namespace

extern "C" int lathe_reference(const lathe_args* args) {
  if (args->num_inputs != 3 || args->num_outputs != 1 || args->num_scalars != 1) {
    set_error(args,
              "layernorm_cuda GPU reference: expects inputs X, gamma, beta, scalar eps and "
              "output Y");
    return 1;
  }
  const DLTensor& X = args->inputs[0];
  const DLTensor& G = args->inputs[1];
  const DLTensor& B = args->inputs[2];
  const DLTensor& Y = args->outputs[0];
  if (!is_float(X, 2, 32) || !is_float(G, 1, 32) || !is_float(B, 1, 32) || !is_float(Y, 2, 64) ||
      G.shape[0] != X.shape[1] || B.shape[0] != X.shape[1] || Y.shape[0] != X.shape[0] ||
      Y.shape[1] != X.shape[1]) {
    set_error(args,
              "layernorm_cuda GPU reference: X[R,C], gamma[C], beta[C] float32, Y[R,C] float64, "
              "contiguous, on the device (kDLCUDA)");
    return 1;
  }
  const int64_t R = X.shape[0], C = X.shape[1];
  if (R > INT32_MAX) {
    set_error(args, "layernorm_cuda GPU reference: more rows than one grid holds");
    return 1;
  }
  if (R == 0 || C == 0) return 0;
  layernorm_f64<<<static_cast<unsigned>(R), THREADS, 0, static_cast<cudaStream_t>(args->stream)>>>(
      data_of<const float>(X), data_of<const float>(G), data_of<const float>(B),
      data_of<double>(Y), C, args->scalars[0]);
  if (cudaGetLastError() != cudaSuccess) {
    set_error(args, "layernorm_cuda GPU reference: kernel launch failed");
    return 1;
  }
  return 0;
}
