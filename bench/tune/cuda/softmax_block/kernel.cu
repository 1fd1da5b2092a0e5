// bench/tune on CUDA: Y[R,C] = softmax(X[R,C]) along each row, fp32. One block of THREADS threads
// per row, two passes over the row: the first keeps an online (max, sum of exp(x - max)) pair per
// thread and merges the pairs across the block (shuffles within warps, shared memory between
// them); the second writes exp(x - max) / sum. Loads and stores are VEC floats wide where the
// row's length is a multiple of VEC (every row then starts aligned), scalar otherwise. expf, not
// __expf: the task does not allow fast math. THREADS and VEC are kernel.toml's tunables.
#include <cuda_runtime.h>
#include <lathe/abi.h>
#include <math.h>
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
static_assert(VEC == 1 || VEC == 4, "a load of 1 or 4 floats");

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

// Merges the running pair (m, s) with the element x: s is the sum of exp(. - m) so far.
__device__ void push(float& m, float& s, float x) {
  if (x > m) {
    s = s * expf(m - x) + 1.0f;
    m = x;
  } else {
    s += expf(x - m);
  }
}

// Merges two pairs; an empty pair is (-inf, 0).
__device__ void merge(float& m, float& s, float m2, float s2) {
  if (m2 == -INFINITY) return;
  if (m == -INFINITY) {
    m = m2;
    s = s2;
    return;
  }
  const float mx = fmaxf(m, m2);
  s = s * expf(m - mx) + s2 * expf(m2 - mx);
  m = mx;
}

__device__ void block_merge(float& m, float& s) {
  __shared__ float pm[THREADS / 32], ps[THREADS / 32];
#pragma unroll
  for (int o = 16; o > 0; o >>= 1) merge(m, s, __shfl_xor_sync(0xffffffffu, m, o), __shfl_xor_sync(0xffffffffu, s, o));
  const int lane = threadIdx.x % 32, warp = threadIdx.x / 32;
  if (lane == 0) {
    pm[warp] = m;
    ps[warp] = s;
  }
  __syncthreads();
  m = -INFINITY;
  s = 0.0f;
  for (int w = 0; w < THREADS / 32; ++w) merge(m, s, pm[w], ps[w]);  // every thread, same order
}

template <int W>
__global__ void __launch_bounds__(THREADS)
softmax_block(const float* __restrict__ x, float* __restrict__ y, int C) {
  const size_t row = static_cast<size_t>(blockIdx.x) * C;
  const float* xr = x + row;
  float* yr = y + row;
  float m = -INFINITY, s = 0.0f;
  if constexpr (W == 4) {
    const float4* xv = reinterpret_cast<const float4*>(xr);
    for (int i = threadIdx.x; i < C / 4; i += THREADS) {
      const float4 v = xv[i];
      push(m, s, v.x);
      push(m, s, v.y);
      push(m, s, v.z);
      push(m, s, v.w);
    }
  } else {
    for (int c = threadIdx.x; c < C; c += THREADS) push(m, s, xr[c]);
  }
  block_merge(m, s);
  const float inv = 1.0f / s;
  if constexpr (W == 4) {
    const float4* xv = reinterpret_cast<const float4*>(xr);
    float4* yv = reinterpret_cast<float4*>(yr);
    for (int i = threadIdx.x; i < C / 4; i += THREADS) {
      const float4 v = xv[i];
      yv[i] = make_float4(expf(v.x - m) * inv, expf(v.y - m) * inv, expf(v.z - m) * inv, expf(v.w - m) * inv);
    }
  } else {
    for (int c = threadIdx.x; c < C; c += THREADS) yr[c] = expf(xr[c] - m) * inv;
  }
}

}  // namespace

extern "C" int lathe_launch(const lathe_args* args) {
  if (args->num_inputs != 1 || args->num_outputs != 1) {
    set_error(args, "softmax_block: expects input X and output Y");
    return 1;
  }
  const DLTensor& X = args->inputs[0];
  const DLTensor& Y = args->outputs[0];
  if (!is_f32(X, 2) || !is_f32(Y, 2) || Y.shape[0] != X.shape[0] || Y.shape[1] != X.shape[1]) {
    set_error(args, "softmax_block: X[R,C] and Y[R,C] must be contiguous float32");
    return 1;
  }
  const int64_t R = X.shape[0], C = X.shape[1];
  if (R > INT32_MAX || C > INT32_MAX) {
    set_error(args, "softmax_block: shape too large for this kernel's 32-bit indices");
    return 1;
  }
  if (R == 0 || C == 0) return 0;
  const float* x = data_of<const float>(X);
  float* y = data_of<float>(Y);
  cudaStream_t stream = static_cast<cudaStream_t>(args->stream);
  const bool aligned = reinterpret_cast<uintptr_t>(x) % 16 == 0 && reinterpret_cast<uintptr_t>(y) % 16 == 0 && C % 4 == 0;
  if (VEC == 4 && aligned)
    softmax_block<4><<<static_cast<unsigned>(R), THREADS, 0, stream>>>(x, y, static_cast<int>(C));
  else
    softmax_block<1><<<static_cast<unsigned>(R), THREADS, 0, stream>>>(x, y, static_cast<int>(C));
  if (cudaGetLastError() != cudaSuccess) {
    set_error(args, "softmax_block: kernel launch failed");
    return 1;
  }
  return 0;
}
