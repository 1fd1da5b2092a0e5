// Stage 1 conv2d: Y[N,H,W,K] (bf16) = conv3x3(X[N,H,W,C] (bf16), Wt[K,3,3,C] (bf16)), stride 1,
// zero padding 1, fp32 accumulation (tasks/conv2d_cuda/task.toml has the contract).
//
// Adds shared-memory tiling to the naive kernel, on the implicit GEMM view of the convolution:
//   Y[m, k] = sum_j A[m, j] * B[j, k],  m = (n, p, q) in [0, N*H*W),  j = (r, s, c) in [0, 9C),
//   A[m, j] = X[n, p+r-1, q+s-1, c] (0 outside the image),  B[j, k] = Wt[k, r, s, c],
// so a row of Wt (KRSC) is a column of B, contiguous in j, and A is never materialized: each
// element of an A tile is gathered from X when the tile is loaded.
//
// A block of 32x32 threads computes a 32x32 tile of Y (32 pixels x 32 output channels), one
// element per thread, and walks j in steps of TILE = 32. Thread (ty, tx) loads A[m0+ty, j0+tx]
// (consecutive lanes read consecutive channels of one pixel: coalesced) and B[j0+tx, k0+ty]
// (consecutive lanes read consecutive j of one filter row: coalesced), converted to fp32 once;
// the block syncs and every thread does 32 multiply-adds from shared memory. As[ty][j] is a
// broadcast within a warp and Bs[j][tx] hits 32 distinct banks; the B tile is stored transposed
// (Bs[tx][ty] by its loader), so its rows are padded to 33 floats to spread those stores over
// the banks. Out-of-range elements (ragged N*H*W, K, 9C; taps in the padding) load as zeros;
// any N, H, W, C, K works.
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

constexpr int TILE = 32;

__global__ void __launch_bounds__(TILE * TILE)
conv_smem(const __nv_bfloat16* __restrict__ X, const __nv_bfloat16* __restrict__ Wt,
          __nv_bfloat16* __restrict__ Y, int M, int H, int W, int C, int K) {
  __shared__ float As[TILE][TILE];
  __shared__ float Bs[TILE][TILE + 1];
  const int tx = threadIdx.x, ty = threadIdx.y;
  const int m0 = blockIdx.y * TILE, k0 = blockIdx.x * TILE;
  const int J = 9 * C;

  // The pixel of A row m0 + ty, which this thread loads for every j tile.
  const int am = m0 + ty;
  const bool arow = am < M;
  const int aq = arow ? am % W : 0, ap = arow ? (am / W) % H : 0, an = arow ? am / (W * H) : 0;
  // The filter row (output channel) of B column k0 + ty, which this thread loads.
  const int bk = k0 + ty;
  const __nv_bfloat16* wrow = Wt + static_cast<size_t>(bk) * J;

  float acc = 0.0f;
  for (int j0 = 0; j0 < J; j0 += TILE) {
    const int j = j0 + tx;
    float a = 0.0f, b = 0.0f;
    if (j < J) {
      const int rs = j / C, c = j - rs * C;
      const int h = ap + rs / 3 - 1, x = aq + rs % 3 - 1;
      if (arow && h >= 0 && h < H && x >= 0 && x < W)
        a = __bfloat162float(X[((static_cast<size_t>(an) * H + h) * W + x) * C + c]);
      if (bk < K) b = __bfloat162float(wrow[j]);
    }
    As[ty][tx] = a;
    Bs[tx][ty] = b;
    __syncthreads();
#pragma unroll
    for (int jj = 0; jj < TILE; ++jj) acc = fmaf(As[ty][jj], Bs[jj][tx], acc);
    __syncthreads();
  }
  const int k = k0 + tx;
  if (am < M && k < K) Y[static_cast<size_t>(am) * K + k] = __float2bfloat16_rn(acc);
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
  if (M > INT32_MAX || K * 9 * C > INT32_MAX || (M + TILE - 1) / TILE > 65535) {
    set_error(args, "conv2d_cuda: shape too large for this kernel's 32-bit indices / grid");
    return 1;
  }
  if (M == 0 || K == 0) return 0;
  const dim3 block(TILE, TILE);
  const dim3 grid(static_cast<unsigned>((K + TILE - 1) / TILE),
                  static_cast<unsigned>((M + TILE - 1) / TILE));
  conv_smem<<<grid, block, 0, static_cast<cudaStream_t>(args->stream)>>>(
      data_of<const __nv_bfloat16>(X), data_of<const __nv_bfloat16>(Wt), data_of<__nv_bfloat16>(Y),
      static_cast<int>(M), static_cast<int>(H), static_cast<int>(W), static_cast<int>(C),
      static_cast<int>(K));
  if (cudaGetLastError() != cudaSuccess) {
    set_error(args, "conv2d_cuda: kernel launch failed");
    return 1;
  }
  return 0;
}
