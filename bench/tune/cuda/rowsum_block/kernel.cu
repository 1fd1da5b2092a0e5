// bench/tune on CUDA: Y[R] = sum of X[R,C] along each row, fp32. One block of THREADS threads per
// row; each thread sums a strided slice of the row with loads VEC floats wide (where the row's
// length is a multiple of VEC, so every row starts aligned; scalar loads otherwise), then the
// block reduces its partial sums: shuffles within each warp, one value per warp in shared memory,
// shuffles in the first warp. THREADS and VEC are kernel.toml's tunables.
#include <cuda_runtime.h>
#include <lathe/abi.h>
#include <stddef.h>
#include <stdint.h>

#ifndef THREADS
#define THREADS 256
#endif
#ifndef VEC
#define VEC 1
#endif

namespace {

static_assert(THREADS % 32 == 0 && THREADS >= 32 && THREADS <= 1024, "whole warps, 32..1024");
static_assert(VEC == 1 || VEC == 2 || VEC == 4, "a load of 1, 2 or 4 floats");

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

template <class E>
E* data_of(const DLTensor& t) {
  return reinterpret_cast<E*>(static_cast<char*>(t.data) + t.byte_offset);
}

__device__ float block_sum(float s) {
  __shared__ float partial[THREADS / 32];
#pragma unroll
  for (int o = 16; o > 0; o >>= 1) s += __shfl_down_sync(0xffffffffu, s, o);
  const int lane = threadIdx.x % 32, warp = threadIdx.x / 32;
  if (lane == 0) partial[warp] = s;
  __syncthreads();
  s = 0.0f;
  if (warp == 0) {
    if (lane < THREADS / 32) s = partial[lane];
#pragma unroll
    for (int o = 16; o > 0; o >>= 1) s += __shfl_down_sync(0xffffffffu, s, o);
  }
  return s;
}

template <int W>
__global__ void __launch_bounds__(THREADS)
rowsum_block(const float* __restrict__ x, float* __restrict__ y, int C) {
  const float* xr = x + static_cast<size_t>(blockIdx.x) * C;
  float s = 0.0f;
  if constexpr (W == 4) {
    const float4* xv = reinterpret_cast<const float4*>(xr);
    for (int i = threadIdx.x; i < C / 4; i += THREADS) {
      const float4 v = xv[i];
      s += (v.x + v.y) + (v.z + v.w);
    }
  } else if constexpr (W == 2) {
    const float2* xv = reinterpret_cast<const float2*>(xr);
    for (int i = threadIdx.x; i < C / 2; i += THREADS) {
      const float2 v = xv[i];
      s += v.x + v.y;
    }
  } else {
    for (int i = threadIdx.x; i < C; i += THREADS) s += xr[i];
  }
  for (int c = (C / W) * W + threadIdx.x; c < C; c += THREADS) s += xr[c];
  s = block_sum(s);
  if (threadIdx.x == 0) y[blockIdx.x] = s;
}

}  // namespace

extern "C" int lathe_launch(const lathe_args* args) {
  if (args->num_inputs != 1 || args->num_outputs != 1) {
    set_error(args, "rowsum_block: expects input X and output Y");
    return 1;
  }
  const DLTensor& X = args->inputs[0];
  const DLTensor& Y = args->outputs[0];
  if (!is_f32(X, 2) || !is_f32(Y, 1) || Y.shape[0] != X.shape[0]) {
    set_error(args, "rowsum_block: X[R,C] and Y[R] must be contiguous float32");
    return 1;
  }
  const int64_t R = X.shape[0], C = X.shape[1];
  if (R > INT32_MAX || C > INT32_MAX) {
    set_error(args, "rowsum_block: shape too large for this kernel's 32-bit indices");
    return 1;
  }
  if (R == 0) return 0;
  const float* x = data_of<const float>(X);
  float* y = data_of<float>(Y);
  cudaStream_t stream = static_cast<cudaStream_t>(args->stream);
  const bool aligned = reinterpret_cast<uintptr_t>(x) % (4 * VEC) == 0 && C % VEC == 0;
  if (aligned)
    rowsum_block<VEC><<<static_cast<unsigned>(R), THREADS, 0, stream>>>(x, y, static_cast<int>(C));
  else
    rowsum_block<1><<<static_cast<unsigned>(R), THREADS, 0, stream>>>(x, y, static_cast<int>(C));
  if (cudaGetLastError() != cudaSuccess) {
    set_error(args, "rowsum_block: kernel launch failed");
    return 1;
  }
  return 0;
}
