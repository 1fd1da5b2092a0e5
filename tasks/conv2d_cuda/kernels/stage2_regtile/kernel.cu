// Stage 2 conv2d: Y[N,H,W,K] (bf16) = conv3x3(X[N,H,W,C] (bf16), Wt[K,3,3,C] (bf16)), stride 1,
// zero padding 1, fp32 accumulation (tasks/conv2d_cuda/task.toml has the contract).
//
// Stage 1 (the implicit GEMM Y[m, k] = sum_j A[m, j] B[j, k] over j = (r, s, c), tiles of A
// gathered from X and of B read from the KRSC filter into shared memory) plus register tiling: a
// block of 256 threads computes a 128 x 128 tile of Y (128 pixels x 128 output channels), each
// thread an 8 x 8 micro-tile held in registers (rows ty + 16 i, columns tx + 16 j), over 16-deep
// j tiles. Per j step a thread reads 8 + 8 operands from shared memory for 64 multiply-adds (one
// load per 4 FMA instead of 2 per FMA).
//
// Loading: thread t always loads the j column jj = t % 16 of the tile, for rows t / 16 + 16 i
// (i < 8) of A and columns t / 16 + 16 i of B, so 16 consecutive lanes read 16 consecutive
// channels of one pixel (A) or 16 consecutive j of one filter row (B). The pixel (p, q) of each
// of its 8 A rows is computed once; a j tile costs the thread one division (j -> tap, channel).
// A pixel's neighbour (p + dr, q + ds) is row m + dr*W + ds of the NHWC image, valid when both
// coordinates stay inside it. Both tiles are stored j-major (As[jj][row], Bs[jj][col]) so that
// the compute loop reads rows and columns along the fast axis; the rows are padded to 130 floats
// so the loaders' transposing stores (16 jj x 2 rows per warp) hit 32 distinct banks. Ragged
// edges load zeros; any N, H, W, C, K works.
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

constexpr int BM = 128, BN = 128, BK = 16;  // block tile: pixels x output channels x j
constexpr int TX = 16, TY = 16;             // 256 threads
constexpr int TM = BM / TY, TN = BN / TX;   // 8 x 8 outputs per thread
constexpr int LD = BM + 2;                  // padded row of As / Bs (BM == BN), in floats
constexpr int ROWS = BM * BK / (TX * TY);   // A rows (and B columns) each thread loads: 8

__global__ void __launch_bounds__(TX * TY)
conv_regtile(const __nv_bfloat16* __restrict__ X, const __nv_bfloat16* __restrict__ Wt,
             __nv_bfloat16* __restrict__ Y, int M, int H, int W, int C, int K) {
  __shared__ float As[BK][LD];
  __shared__ float Bs[BK][LD];
  const int tid = threadIdx.x;
  const int tx = tid % TX, ty = tid / TX;
  const int m0 = blockIdx.y * BM, k0 = blockIdx.x * BN;
  const int J = 9 * C;
  const int jj = tid % BK, lr = tid / BK;  // loader: j column, first row

  // (p, q) of the loaded A rows; rows past M get p = -4, so every tap fails the range test.
  int ap[ROWS], aq[ROWS];
#pragma unroll
  for (int i = 0; i < ROWS; ++i) {
    const int m = m0 + lr + 16 * i;
    ap[i] = m < M ? (m / W) % H : -4;
    aq[i] = m < M ? m % W : 0;
  }

  float acc[TM][TN];
#pragma unroll
  for (int i = 0; i < TM; ++i)
#pragma unroll
    for (int j = 0; j < TN; ++j) acc[i][j] = 0.0f;

  for (int j0 = 0; j0 < J; j0 += BK) {
    const int j = j0 + jj;
    const bool jin = j < J;
    const int rs = jin ? j / C : 0, c = j - rs * C;
    const int dr = rs / 3 - 1, ds = rs % 3 - 1;
#pragma unroll
    for (int i = 0; i < ROWS; ++i) {
      const int m = m0 + lr + 16 * i;
      const int h = ap[i] + dr, x = aq[i] + ds;
      float a = 0.0f;
      if (jin && h >= 0 && h < H && x >= 0 && x < W)
        a = __bfloat162float(X[(static_cast<int64_t>(m) + dr * W + ds) * C + c]);
      As[jj][lr + 16 * i] = a;
      const int k = k0 + lr + 16 * i;
      Bs[jj][lr + 16 * i] = jin && k < K ? __bfloat162float(Wt[static_cast<size_t>(k) * J + j]) : 0.0f;
    }
    __syncthreads();
#pragma unroll
    for (int kk = 0; kk < BK; ++kk) {
      float a[TM], b[TN];
#pragma unroll
      for (int i = 0; i < TM; ++i) a[i] = As[kk][ty + TY * i];
#pragma unroll
      for (int j = 0; j < TN; ++j) b[j] = Bs[kk][tx + TX * j];
#pragma unroll
      for (int i = 0; i < TM; ++i)
#pragma unroll
        for (int j = 0; j < TN; ++j) acc[i][j] = fmaf(a[i], b[j], acc[i][j]);
    }
    __syncthreads();
  }
#pragma unroll
  for (int i = 0; i < TM; ++i) {
    const int m = m0 + ty + TY * i;
    if (m >= M) continue;
#pragma unroll
    for (int j = 0; j < TN; ++j) {
      const int k = k0 + tx + TX * j;
      if (k < K) Y[static_cast<size_t>(m) * K + k] = __float2bfloat16_rn(acc[i][j]);
    }
  }
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
  if (M + BM > INT32_MAX || K * 9 * C > INT32_MAX || (M + BM - 1) / BM > 65535) {
    set_error(args, "conv2d_cuda: shape too large for this kernel's 32-bit indices / grid");
    return 1;
  }
  if (M == 0 || K == 0) return 0;
  const dim3 grid(static_cast<unsigned>((K + BN - 1) / BN), static_cast<unsigned>((M + BM - 1) / BM));
  conv_regtile<<<grid, TX * TY, 0, static_cast<cudaStream_t>(args->stream)>>>(
      data_of<const __nv_bfloat16>(X), data_of<const __nv_bfloat16>(Wt), data_of<__nv_bfloat16>(Y),
      static_cast<int>(M), static_cast<int>(H), static_cast<int>(W), static_cast<int>(C),
      static_cast<int>(K));
  if (cudaGetLastError() != cudaSuccess) {
    set_error(args, "conv2d_cuda: kernel launch failed");
    return 1;
  }
  return 0;
}
