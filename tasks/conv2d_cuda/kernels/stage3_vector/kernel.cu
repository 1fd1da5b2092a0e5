// Stage 3 conv2d: Y[N,H,W,K] (bf16) = conv3x3(X[N,H,W,C] (bf16), Wt[K,3,3,C] (bf16)), stride 1,
// zero padding 1, fp32 accumulation (tasks/conv2d_cuda/task.toml has the contract).
//
// Stage 2 (implicit GEMM over j = (r, s, c), 128 x 128 block tile, 8 x 8 register micro-tile
// per thread, 16-deep j tiles in shared memory) plus 128-bit vector access:
//  - global loads of 8 bf16 at once (uint4): a 16-deep j tile is 2 chunks of 8 channels per A
//    row and per B column, so each of the 256 threads loads exactly one chunk of A (row t / 2,
//    chunk t % 2) and one of B. The contract (C and K multiples of 8) is what makes this legal:
//    j = (r*3 + s)*C + c with c a multiple of 8 keeps a chunk inside one tap (one pixel of X, 8
//    consecutive channels), every pixel row of X and filter row of Wt starts on a 16-byte
//    boundary, and a chunk is wholly inside or wholly outside 9C;
//  - the micro-tile's columns become contiguous (tx*8 .. tx*8 + 7, rows still ty + 16 i), so B
//    is read from shared memory as two float4 per j step and each output row segment is written
//    as one 16-byte store of 8 bf16 (K a multiple of 8: a segment is all in or all out).
// The tiles stay fp32 and j-major in shared memory; the loader transposes its 8 values with
// scalar stores. A rows are padded to 130 floats (the 8 stores of a warp then hit 32 distinct
// banks); B rows to 132, a multiple of 4 for the float4 reads (its transposing stores are 2-way
// conflicted, 8 per thread per tile).
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
constexpr int LDA = BM + 2;                 // padded rows of As and Bs, in floats
constexpr int LDB = BN + 4;

// 8 bf16 (a uint4) to 8 floats: a bf16 is the high half of an fp32.
__device__ __forceinline__ void unpack8(const uint4& v, float (&f)[8]) {
  const uint32_t w[4] = {v.x, v.y, v.z, v.w};
#pragma unroll
  for (int i = 0; i < 4; ++i) {
    f[2 * i] = __uint_as_float(w[i] << 16);
    f[2 * i + 1] = __uint_as_float(w[i] & 0xffff0000u);
  }
}

__device__ __forceinline__ uint32_t pack2(float lo, float hi) {
  const __nv_bfloat162 v = __floats2bfloat162_rn(lo, hi);  // .x = lo (lower address)
  return *reinterpret_cast<const uint32_t*>(&v);
}

__global__ void __launch_bounds__(TX * TY)
conv_vector(const __nv_bfloat16* __restrict__ X, const __nv_bfloat16* __restrict__ Wt,
            __nv_bfloat16* __restrict__ Y, int M, int H, int W, int C, int K) {
  __shared__ float As[BK][LDA];
  __shared__ __align__(16) float Bs[BK][LDB];
  const int tid = threadIdx.x;
  const int tx = tid % TX, ty = tid / TX;
  const int m0 = blockIdx.y * BM, k0 = blockIdx.x * BN;
  const int J = 9 * C;
  const int lrow = tid / 2, lj = (tid % 2) * 8;  // loader: A row / B column, chunk offset in j

  // (p, q) of the loaded A row; a row past M gets p = -4, so every tap fails the range test.
  const int am = m0 + lrow;
  const int ap = am < M ? (am / W) % H : -4, aq = am < M ? am % W : 0;
  const int bk = k0 + lrow;

  float acc[TM][TN];
#pragma unroll
  for (int i = 0; i < TM; ++i)
#pragma unroll
    for (int j = 0; j < TN; ++j) acc[i][j] = 0.0f;

  for (int j0 = 0; j0 < J; j0 += BK) {
    const int j = j0 + lj;
    const bool jin = j < J;  // J and j multiples of 8: the chunk is all in or all out
    const int rs = jin ? j / C : 0, c = j - rs * C;
    const int h = ap + rs / 3 - 1, x = aq + rs % 3 - 1;
    uint4 va = make_uint4(0, 0, 0, 0), vb = make_uint4(0, 0, 0, 0);
    if (jin && h >= 0 && h < H && x >= 0 && x < W)
      va = *reinterpret_cast<const uint4*>(
          X + (static_cast<int64_t>(am) + (rs / 3 - 1) * W + (rs % 3 - 1)) * C + c);
    if (jin && bk < K) vb = *reinterpret_cast<const uint4*>(Wt + static_cast<int64_t>(bk) * J + j);
    float fa[8], fb[8];
    unpack8(va, fa);
    unpack8(vb, fb);
#pragma unroll
    for (int e = 0; e < 8; ++e) {
      As[lj + e][lrow] = fa[e];
      Bs[lj + e][lrow] = fb[e];
    }
    __syncthreads();
#pragma unroll
    for (int kk = 0; kk < BK; ++kk) {
      float a[TM], b[TN];
#pragma unroll
      for (int i = 0; i < TM; ++i) a[i] = As[kk][ty + TY * i];
      const float4 b0 = *reinterpret_cast<const float4*>(&Bs[kk][tx * TN]);
      const float4 b1 = *reinterpret_cast<const float4*>(&Bs[kk][tx * TN + 4]);
      b[0] = b0.x, b[1] = b0.y, b[2] = b0.z, b[3] = b0.w;
      b[4] = b1.x, b[5] = b1.y, b[6] = b1.z, b[7] = b1.w;
#pragma unroll
      for (int i = 0; i < TM; ++i)
#pragma unroll
        for (int j = 0; j < TN; ++j) acc[i][j] = fmaf(a[i], b[j], acc[i][j]);
    }
    __syncthreads();
  }
  const int k = k0 + tx * TN;
  if (k >= K) return;  // K a multiple of 8: the thread's 8 columns are all in or all out
#pragma unroll
  for (int i = 0; i < TM; ++i) {
    const int m = m0 + ty + TY * i;
    if (m >= M) continue;
    const uint4 v = make_uint4(pack2(acc[i][0], acc[i][1]), pack2(acc[i][2], acc[i][3]),
                               pack2(acc[i][4], acc[i][5]), pack2(acc[i][6], acc[i][7]));
    *reinterpret_cast<uint4*>(Y + static_cast<int64_t>(m) * K + k) = v;
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
  if (C % 8 != 0 || K % 8 != 0) {
    set_error(args, "conv2d_cuda: this kernel needs C and K multiples of 8 (16-byte channel chunks)");
    return 1;
  }
  const int64_t M = N * H * W;
  if (M + BM > INT32_MAX || K * 9 * C > INT32_MAX || (M + BM - 1) / BM > 65535) {
    set_error(args, "conv2d_cuda: shape too large for this kernel's 32-bit indices / grid");
    return 1;
  }
  if (M == 0 || K == 0) return 0;
  const dim3 grid(static_cast<unsigned>((K + BN - 1) / BN), static_cast<unsigned>((M + BM - 1) / BM));
  conv_vector<<<grid, TX * TY, 0, static_cast<cudaStream_t>(args->stream)>>>(
      data_of<const __nv_bfloat16>(X), data_of<const __nv_bfloat16>(Wt), data_of<__nv_bfloat16>(Y),
      static_cast<int>(M), static_cast<int>(H), static_cast<int>(W), static_cast<int>(C),
      static_cast<int>(K));
  if (cudaGetLastError() != cudaSuccess) {
    set_error(args, "conv2d_cuda: kernel launch failed");
    return 1;
  }
  return 0;
}
