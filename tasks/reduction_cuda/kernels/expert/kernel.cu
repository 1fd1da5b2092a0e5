// Expert row sum on the GPU, fp32: one 256-thread block per row, X read exactly once.
//
// Fast path (C % 4 == 0: rows start 16-byte aligned): each thread issues UNROLL = 8 independent
// float4 loads before it adds any of them, so 128 bytes per thread, 256 KiB per SM at 8 resident
// blocks, are in flight: several times the HBM latency-bandwidth product per SM (~4.8 TB/s x ~1 us
// / 132 SMs ~ 36 KiB), which a read-only stream needs to reach the bandwidth ceiling. Eight
// independent partial sums also keep the adds off one dependence chain (and make the sum more
// accurate than a serial one). The loads use the streaming hint (.cs): X is read once. The block
// then reduces with warp shuffles and one shared-memory exchange; thread 0 writes Y[r].
// 256 threads x 8 float4 = 2048 float4 = one 32 KiB slice of a row per trip: C = 16384 takes two.
// General path (C % 4 != 0): the same block per row with coalesced scalar loads.
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

constexpr int THREADS = 256;
constexpr int UNROLL = 8;

__device__ __forceinline__ float warp_sum(float v) {
#pragma unroll
  for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
  return v;
}

// Block-wide sum: each warp reduces, lane 0 posts to shared memory, one barrier, warp 0 finishes.
__device__ __forceinline__ float block_sum(float v) {
  __shared__ float sh[THREADS / 32];
  v = warp_sum(v);
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  if (lane == 0) sh[warp] = v;
  __syncthreads();
  v = lane < THREADS / 32 ? sh[lane] : 0.0f;
  return warp_sum(v);  // every warp computes it; thread 0's copy is used
}

__global__ void __launch_bounds__(THREADS)
rowsum_vec(const float* __restrict__ x, float* __restrict__ y, int C) {
  const int C4 = C / 4;
  const float4* xr = reinterpret_cast<const float4*>(x + static_cast<size_t>(blockIdx.x) * C);
  float s[UNROLL];
#pragma unroll
  for (int u = 0; u < UNROLL; ++u) s[u] = 0.0f;
  int i = threadIdx.x;
  for (; i + (UNROLL - 1) * THREADS < C4; i += UNROLL * THREADS) {
    float4 v[UNROLL];
#pragma unroll
    for (int u = 0; u < UNROLL; ++u) v[u] = __ldcs(xr + i + u * THREADS);
#pragma unroll
    for (int u = 0; u < UNROLL; ++u) s[u] += (v[u].x + v[u].y) + (v[u].z + v[u].w);
  }
  for (; i < C4; i += THREADS) {  // the partial last trip
    const float4 v = __ldcs(xr + i);
    s[0] += (v.x + v.y) + (v.z + v.w);
  }
  float t = 0.0f;
#pragma unroll
  for (int u = 0; u < UNROLL; ++u) t += s[u];
  t = block_sum(t);
  if (threadIdx.x == 0) y[blockIdx.x] = t;
}

__global__ void __launch_bounds__(THREADS)
rowsum_generic(const float* __restrict__ x, float* __restrict__ y, int C) {
  const float* xr = x + static_cast<size_t>(blockIdx.x) * C;
  float s0 = 0.0f, s1 = 0.0f, s2 = 0.0f, s3 = 0.0f;
  int c = threadIdx.x;
  for (; c + 3 * THREADS < C; c += 4 * THREADS) {
    s0 += xr[c];
    s1 += xr[c + THREADS];
    s2 += xr[c + 2 * THREADS];
    s3 += xr[c + 3 * THREADS];
  }
  for (; c < C; c += THREADS) s0 += xr[c];
  const float t = block_sum((s0 + s1) + (s2 + s3));
  if (threadIdx.x == 0) y[blockIdx.x] = t;
}

}  // namespace

extern "C" int lathe_launch(const lathe_args* args) {
  if (args->num_inputs != 1 || args->num_outputs != 1) {
    set_error(args, "reduction_cuda: expects input X and output Y");
    return 1;
  }
  const DLTensor& X = args->inputs[0];
  const DLTensor& Y = args->outputs[0];
  if (!is_f32(X, 2) || !is_f32(Y, 1) || Y.shape[0] != X.shape[0]) {
    set_error(args, "reduction_cuda: X[R,C] and Y[R] must be contiguous float32");
    return 1;
  }
  const int64_t R = X.shape[0], C = X.shape[1];
  if (R > INT32_MAX || C > INT32_MAX) {
    set_error(args, "reduction_cuda: shape too large for this kernel's 32-bit indices");
    return 1;
  }
  if (R == 0) return 0;
  const float* x = data_of<const float>(X);
  float* y = data_of<float>(Y);
  cudaStream_t stream = static_cast<cudaStream_t>(args->stream);
  if (C % 4 == 0)
    rowsum_vec<<<static_cast<unsigned>(R), THREADS, 0, stream>>>(x, y, static_cast<int>(C));
  else
    rowsum_generic<<<static_cast<unsigned>(R), THREADS, 0, stream>>>(x, y, static_cast<int>(C));
  if (cudaGetLastError() != cudaSuccess) {
    set_error(args, "reduction_cuda: kernel launch failed");
    return 1;
  }
  return 0;
}
