// Expert row softmax on the GPU, fp32: one block per row, the row held in registers, so X is read
// once and Y written once (8 bytes per element, the minimum).
//
// Fast path (C % 4 == 0, so every row starts 16-byte aligned, and C <= 32768): each thread loads up
// to V = 8 float4 of its row with independent 16-byte loads issued back to back (up to 128 bytes
// in flight per thread; with ~4 blocks of 256 threads per SM that is ~128 KiB per SM, well above
// the ~32 KiB the HBM latency-bandwidth product asks for), reduces the max and then the sum of
// exp(x - max) with warp shuffles and one shared-memory exchange per reduction, and stores
// exp(x - max) / sum as float4. The block has ceil(C / 4 / V) threads rounded up to a warp: 256
// for C = 8192, so every thread holds exactly 8 float4. Loads and stores use the streaming cache
// hints (.cs): the data is touched once.
// General path (C % 4 != 0 or longer rows): one 256-thread block per row, a coalesced scalar pass
// that keeps an online (max, sum) per thread, merged across the block, then a second pass that
// writes exp(x - max) / sum (the row's second read mostly hits L2).
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

__device__ __forceinline__ float warp_max(float v) {
#pragma unroll
  for (int o = 16; o > 0; o >>= 1) v = fmaxf(v, __shfl_xor_sync(0xffffffffu, v, o));
  return v;
}

__device__ __forceinline__ float warp_sum(float v) {
#pragma unroll
  for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
  return v;
}

// Block-wide reductions: each warp reduces, lane 0 posts to `sh`, one barrier, then every warp
// reduces the posted partials itself (no second barrier). Distinct `sh` arrays per reduction keep
// a fast warp's next post from racing a slow warp's read.
__device__ __forceinline__ float block_max(float v, float* sh) {
  v = warp_max(v);
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, nw = blockDim.x >> 5;
  if (lane == 0) sh[warp] = v;
  __syncthreads();
  return warp_max(lane < nw ? sh[lane] : -INFINITY);
}

__device__ __forceinline__ float block_sum(float v, float* sh) {
  v = warp_sum(v);
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, nw = blockDim.x >> 5;
  if (lane == 0) sh[warp] = v;
  __syncthreads();
  return warp_sum(lane < nw ? sh[lane] : 0.0f);
}

__global__ void __launch_bounds__(MAX_THREADS)
softmax_rows_regs(const float* __restrict__ x, float* __restrict__ y, int C) {
  __shared__ float sh_max[32], sh_sum[32];
  const int C4 = C / 4;
  const float4* xr = reinterpret_cast<const float4*>(x + static_cast<size_t>(blockIdx.x) * C);
  float4* yr = reinterpret_cast<float4*>(y + static_cast<size_t>(blockIdx.x) * C);
  float4 v[V];
  float m = -INFINITY;
#pragma unroll
  for (int i = 0; i < V; ++i) {
    const int idx = threadIdx.x + i * blockDim.x;
    if (idx < C4) {
      v[i] = __ldcs(xr + idx);
      m = fmaxf(m, fmaxf(fmaxf(v[i].x, v[i].y), fmaxf(v[i].z, v[i].w)));
    }
  }
  m = block_max(m, sh_max);
  float s = 0.0f;
#pragma unroll
  for (int i = 0; i < V; ++i) {
    const int idx = threadIdx.x + i * blockDim.x;
    if (idx < C4) {
      v[i].x = expf(v[i].x - m);
      v[i].y = expf(v[i].y - m);
      v[i].z = expf(v[i].z - m);
      v[i].w = expf(v[i].w - m);
      s += (v[i].x + v[i].y) + (v[i].z + v[i].w);
    }
  }
  s = block_sum(s, sh_sum);
  const float inv = 1.0f / s;
#pragma unroll
  for (int i = 0; i < V; ++i) {
    const int idx = threadIdx.x + i * blockDim.x;
    if (idx < C4)
      __stcs(yr + idx, make_float4(v[i].x * inv, v[i].y * inv, v[i].z * inv, v[i].w * inv));
  }
}

// Merge two online-softmax states (max m, sum s of exp(x - m)); an empty state is (-inf, 0).
__device__ __forceinline__ void merge(float& m, float& s, float m2, float s2) {
  const float mm = fmaxf(m, m2);
  if (mm == -INFINITY) return;  // both empty
  s = s * expf(m - mm) + s2 * expf(m2 - mm);
  m = mm;
}

__global__ void __launch_bounds__(GENERIC_THREADS)
softmax_rows_generic(const float* __restrict__ x, float* __restrict__ y, int C) {
  __shared__ float sh_m[GENERIC_THREADS / 32], sh_s[GENERIC_THREADS / 32];
  const float* xr = x + static_cast<size_t>(blockIdx.x) * C;
  float* yr = y + static_cast<size_t>(blockIdx.x) * C;
  float m = -INFINITY, s = 0.0f;
  for (int c = threadIdx.x; c < C; c += blockDim.x) {
    const float v = xr[c];
    if (v > m) {
      s = s * expf(m - v) + 1.0f;
      m = v;
    } else {
      s += expf(v - m);
    }
  }
#pragma unroll
  for (int o = 16; o > 0; o >>= 1) {
    const float m2 = __shfl_xor_sync(0xffffffffu, m, o);
    const float s2 = __shfl_xor_sync(0xffffffffu, s, o);
    merge(m, s, m2, s2);
  }
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, nw = blockDim.x >> 5;
  if (lane == 0) {
    sh_m[warp] = m;
    sh_s[warp] = s;
  }
  __syncthreads();
  m = -INFINITY;
  s = 0.0f;
  for (int w = 0; w < nw; ++w) merge(m, s, sh_m[w], sh_s[w]);
  const float inv = 1.0f / s;
  for (int c = threadIdx.x; c < C; c += blockDim.x) yr[c] = expf(xr[c] - m) * inv;
}

}  // namespace

extern "C" int lathe_launch(const lathe_args* args) {
  if (args->num_inputs != 1 || args->num_outputs != 1) {
    set_error(args, "softmax_cuda: expects input X and output Y");
    return 1;
  }
  const DLTensor& X = args->inputs[0];
  const DLTensor& Y = args->outputs[0];
  if (!is_f32(X, 2) || !is_f32(Y, 2) || X.shape[0] != Y.shape[0] || X.shape[1] != Y.shape[1]) {
    set_error(args, "softmax_cuda: X and Y must be contiguous 2-D float32 of the same shape");
    return 1;
  }
  const int64_t R = X.shape[0], C = X.shape[1];
  if (R > INT32_MAX || C > INT32_MAX) {
    set_error(args, "softmax_cuda: shape too large for this kernel's 32-bit indices");
    return 1;
  }
  if (R == 0 || C == 0) return 0;
  const float* x = data_of<const float>(X);
  float* y = data_of<float>(Y);
  cudaStream_t stream = static_cast<cudaStream_t>(args->stream);
  const int64_t C4 = C / 4;
  if (C % 4 == 0 && C4 <= int64_t(V) * MAX_THREADS) {
    int threads = static_cast<int>((C4 + V - 1) / V);
    threads = (threads + 31) / 32 * 32;
    softmax_rows_regs<<<static_cast<unsigned>(R), threads, 0, stream>>>(x, y,
                                                                         static_cast<int>(C));
  } else {
    softmax_rows_generic<<<static_cast<unsigned>(R), GENERIC_THREADS, 0, stream>>>(
        x, y, static_cast<int>(C));
  }
  if (cudaGetLastError() != cudaSuccess) {
    set_error(args, "softmax_cuda: kernel launch failed");
    return 1;
  }
  return 0;
}
