// Naive conv2d on the GPU: Y[N,H,W,K] (bf16) = conv3x3(X[N,H,W,C] (bf16), Wt[K,3,3,C] (bf16)),
// stride 1, zero padding 1, fp32 accumulation (tasks/conv2d_cuda/task.toml has the contract).
//
// One thread per output element Y[n,p,q,k], walking the 3 x 3 window and the C input channels
// straight from global memory. threadIdx.x runs along k, so a warp writes 32 consecutive output
// channels of one pixel (a coalesced 64-byte store) and reads one X element that all its lanes
// share (a broadcast); the filter reads are 9C elements apart across the warp and are served by
// L1/L2 (the whole filter is K*9*C*2 bytes, 1.2 MB at the timed shape). Window taps outside the
// image are skipped (the zero padding adds nothing). Nothing is reused through shared memory or
// registers: every multiply-add costs two loads. This is where the lineage starts; it handles any
// N, H, W, C, K.
#include <cuda_bf16.h>
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

// A contiguous row-major 4-D bf16 tensor.
bool is_bf16_4d(const DLTensor& t) {
  if (t.ndim != 4 || t.dtype.code != kDLBfloat || t.dtype.bits != 16 || t.dtype.lanes != 1)
    return false;
  if (t.strides == nullptr) return true;
  int64_t expect = 1;
  for (int d = 3; d >= 0; --d) {
    if (t.shape[d] != 1 && t.strides[d] != expect) return false;
    expect *= t.shape[d];
  }
  return true;
}

template <class T>
T* data_of(const DLTensor& t) {
  return reinterpret_cast<T*>(static_cast<char*>(t.data) + t.byte_offset);
}

__global__ void conv_naive(const __nv_bfloat16* __restrict__ X, const __nv_bfloat16* __restrict__ Wt,
                           __nv_bfloat16* __restrict__ Y, int M, int H, int W, int C, int K) {
  const int k = blockIdx.x * blockDim.x + threadIdx.x;
  const int m = blockIdx.y * blockDim.y + threadIdx.y;  // output pixel (n, p, q), row-major
  if (m >= M || k >= K) return;
  const int q = m % W, p = (m / W) % H, n = m / (W * H);
  const __nv_bfloat16* w = Wt + static_cast<size_t>(k) * 9 * C;
  float acc = 0.0f;
  for (int r = 0; r < 3; ++r) {
    const int h = p + r - 1;
    if (h < 0 || h >= H) continue;
    for (int s = 0; s < 3; ++s) {
      const int x = q + s - 1;
      if (x < 0 || x >= W) continue;
      const __nv_bfloat16* a = X + ((static_cast<size_t>(n) * H + h) * W + x) * C;
      const __nv_bfloat16* b = w + (r * 3 + s) * C;
      for (int c = 0; c < C; ++c) acc = fmaf(__bfloat162float(a[c]), __bfloat162float(b[c]), acc);
    }
  }
  Y[static_cast<size_t>(m) * K + k] = __float2bfloat16_rn(acc);
}

}  // namespace

extern "C" int lathe_launch(const lathe_args* args) {
  if (args->num_inputs != 2 || args->num_outputs != 1) {
    set_error(args, "conv2d_cuda: expects inputs X, Wt and output Y");
    return 1;
  }
  const DLTensor& X = args->inputs[0];
  const DLTensor& Wt = args->inputs[1];
  const DLTensor& Y = args->outputs[0];
  if (!is_bf16_4d(X) || !is_bf16_4d(Wt) || !is_bf16_4d(Y)) {
    set_error(args, "conv2d_cuda: X, Wt and Y must be contiguous 4-D bfloat16");
    return 1;
  }
  const int64_t N = X.shape[0], H = X.shape[1], W = X.shape[2], C = X.shape[3], K = Wt.shape[0];
  if (Wt.shape[1] != 3 || Wt.shape[2] != 3 || Wt.shape[3] != C || Y.shape[0] != N ||
      Y.shape[1] != H || Y.shape[2] != W || Y.shape[3] != K) {
    set_error(args, "conv2d_cuda: shapes disagree (X[N,H,W,C], Wt[K,3,3,C], Y[N,H,W,K])");
    return 1;
  }
  const int64_t M = N * H * W;
  if (M > INT32_MAX || K * 9 * C > INT32_MAX || (M + 7) / 8 > 65535) {
    set_error(args, "conv2d_cuda: shape too large for this kernel's 32-bit indices / grid");
    return 1;
  }
  if (M == 0 || K == 0) return 0;
  const dim3 block(32, 8);  // 256 threads: a warp spans 32 output channels of one pixel
  const dim3 grid(static_cast<unsigned>((K + 31) / 32), static_cast<unsigned>((M + 7) / 8));
  conv_naive<<<grid, block, 0, static_cast<cudaStream_t>(args->stream)>>>(
      data_of<const __nv_bfloat16>(X), data_of<const __nv_bfloat16>(Wt), data_of<__nv_bfloat16>(Y),
      static_cast<int>(M), static_cast<int>(H), static_cast<int>(W), static_cast<int>(C),
      static_cast<int>(K));
  if (cudaGetLastError() != cudaSuccess) {
    set_error(args, "conv2d_cuda: kernel launch failed");
    return 1;
  }
  return 0;
}
