// Expert RMS norm on the GPU, fp32: one block per row, the row held in registers, so X is read once
// and Y written once (8 bytes per element, the minimum; w, 4*C bytes, is re-read from L2).
//
// Fast path (C % 4 == 0, so rows start 16-byte aligned, and C <= 32768): each thread loads up to
// V = 8 float4 of its row with independent 16-byte loads issued back to back (up to 128 bytes in
// flight per thread, ~128 KiB per SM at ~4 resident 256-thread blocks, well above what HBM latency
// needs), sums the squares with warp shuffles and one shared-memory exchange, and stores
// x * rsqrt(mean + eps) * w as float4. Block size ceil(C / 4 / V) rounded up to a warp: 256 for
// C = 8192, 8 float4 per thread. X and Y use the streaming cache hints (.cs, touched once); w uses
// the read-only path and stays cached for the next rows.
// General path (C % 4 != 0 or longer rows): one 256-thread block per row, a coalesced scalar pass
// for the sum of squares, then a second pass that writes (the row's second read mostly hits L2).
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

template <class T>
T* data_of(const DLTensor& t) {
  return reinterpret_cast<T*>(static_cast<char*>(t.data) + t.byte_offset);
}

constexpr int V = 8;              // float4 per thread in the register path
constexpr int MAX_THREADS = 1024;  // register path: rows up to 4 * V * 1024 = 32768 floats
constexpr int GENERIC_THREADS = 256;

__device__ __forceinline__ float warp_sum(float v) {
#pragma unroll
  for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
  return v;
}

// Each warp reduces, lane 0 posts to `sh`, one barrier, then every warp reduces the partials.
__device__ __forceinline__ float block_sum(float v, float* sh) {
  v = warp_sum(v);
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, nw = blockDim.x >> 5;
  if (lane == 0) sh[warp] = v;
  __syncthreads();
  return warp_sum(lane < nw ? sh[lane] : 0.0f);
}

__global__ void __launch_bounds__(MAX_THREADS)
rmsnorm_rows_regs(const float* __restrict__ x, const float* __restrict__ w,
                  float* __restrict__ y, int C, float eps) {
  __shared__ float sh[32];
  const int C4 = C / 4;
  const float4* xr = reinterpret_cast<const float4*>(x + static_cast<size_t>(blockIdx.x) * C);
  const float4* w4 = reinterpret_cast<const float4*>(w);
  float4* yr = reinterpret_cast<float4*>(y + static_cast<size_t>(blockIdx.x) * C);
  float4 v[V];
  float ss = 0.0f;
#pragma unroll
  for (int i = 0; i < V; ++i) {
    const int idx = threadIdx.x + i * blockDim.x;
    if (idx < C4) {
      v[i] = __ldcs(xr + idx);
      ss += (v[i].x * v[i].x + v[i].y * v[i].y) + (v[i].z * v[i].z + v[i].w * v[i].w);
    }
  }
  ss = block_sum(ss, sh);
  const float inv = rsqrtf(ss / static_cast<float>(C) + eps);
#pragma unroll
  for (int i = 0; i < V; ++i) {
    const int idx = threadIdx.x + i * blockDim.x;
    if (idx < C4) {
      const float4 g = __ldg(w4 + idx);
      __stcs(yr + idx, make_float4(v[i].x * inv * g.x, v[i].y * inv * g.y, v[i].z * inv * g.z,
                                   v[i].w * inv * g.w));
    }
  }
}

__global__ void __launch_bounds__(GENERIC_THREADS)
rmsnorm_rows_generic(const float* __restrict__ x, const float* __restrict__ w,
                     float* __restrict__ y, int C, float eps) {
  __shared__ float sh[32];
  const float* xr = x + static_cast<size_t>(blockIdx.x) * C;
  float* yr = y + static_cast<size_t>(blockIdx.x) * C;
  float ss = 0.0f;
  for (int c = threadIdx.x; c < C; c += blockDim.x) ss += xr[c] * xr[c];
  ss = block_sum(ss, sh);
  const float inv = rsqrtf(ss / static_cast<float>(C) + eps);
  for (int c = threadIdx.x; c < C; c += blockDim.x) yr[c] = xr[c] * inv * w[c];
}

}  // namespace

extern "C" int lathe_launch(const lathe_args* args) {
  if (args->num_inputs != 2 || args->num_outputs != 1 || args->num_scalars != 1) {
    set_error(args, "rmsnorm_cuda: expects inputs X, w, scalar eps and output Y");
    return 1;
  }
  const DLTensor& X = args->inputs[0];
  const DLTensor& W = args->inputs[1];
  const DLTensor& Y = args->outputs[0];
  if (!is_f32(X, 2) || !is_f32(W, 1) || !is_f32(Y, 2) || W.shape[0] != X.shape[1] ||
      Y.shape[0] != X.shape[0] || Y.shape[1] != X.shape[1]) {
    set_error(args, "rmsnorm_cuda: X[R,C], w[C] and Y[R,C] must be contiguous float32");
    return 1;
  }
  const int64_t R = X.shape[0], C = X.shape[1];
  if (R > INT32_MAX || C > INT32_MAX) {
    set_error(args, "rmsnorm_cuda: shape too large for this kernel's 32-bit indices");
    return 1;
  }
  if (R == 0 || C == 0) return 0;
  const float* x = data_of<const float>(X);
  const float* w = data_of<const float>(W);
  float* y = data_of<float>(Y);
  const float eps = static_cast<float>(args->scalars[0]);
  cudaStream_t stream = static_cast<cudaStream_t>(args->stream);
  const int64_t C4 = C / 4;
  if (C % 4 == 0 && C4 <= int64_t(V) * MAX_THREADS) {
    int threads = static_cast<int>((C4 + V - 1) / V);
    threads = (threads + 31) / 32 * 32;
    rmsnorm_rows_regs<<<static_cast<unsigned>(R), threads, 0, stream>>>(
        x, w, y, static_cast<int>(C), eps);
  } else {
    rmsnorm_rows_generic<<<static_cast<unsigned>(R), GENERIC_THREADS, 0, stream>>>(
        x, w, y, static_cast<int>(C), eps);
  }
  if (cudaGetLastError() != cudaSuccess) {
    set_error(args, "rmsnorm_cuda: kernel launch failed");
    return 1;
  }
  return 0;
}
