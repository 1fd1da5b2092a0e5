// Stage 2 GEMM: C[M,N] (fp32) = A[M,K] (bf16) · B[K,N] (bf16), fp32 accumulation.
//
// Adds register tiling to stage 1. A block of 256 threads computes a BM x BN = 128 x 128 tile of C;
// each thread owns a TM x TN = 8 x 8 micro-tile held in 64 accumulator registers. For every k of a
// BK = 8 slice, a thread reads 8 values of A and 8 of B from shared memory and does 64 FMAs with
// them: 4 FMAs per shared load instead of stage 1's 1, so the kernel stops being bound by shared
// memory. Sizes: 128 x 128 per block over 16 x 16 threads gives the 8 x 8 micro-tile (64
// accumulators + 16 operands fit in the register file with room for 2-3 blocks per SM); BK = 8
// keeps the two tiles at 2 x 4 KiB. A is stored transposed in shared memory, As[k][m], so each
// thread's 8 rows are contiguous. Global loads are still scalar (one bf16 each); out-of-range
// elements load as zeros and out-of-range outputs are not stored, so any M, N, K works.
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

bool is_matrix(const DLTensor& t, uint8_t code, uint8_t bits) {
  if (t.ndim != 2 || t.dtype.code != code || t.dtype.bits != bits || t.dtype.lanes != 1)
    return false;
  return t.strides == nullptr || (t.strides[1] == 1 && t.strides[0] == t.shape[1]);
}

template <class T>
T* data_of(const DLTensor& t) {
  return reinterpret_cast<T*>(static_cast<char*>(t.data) + t.byte_offset);
}

constexpr int BM = 128, BN = 128, BK = 8;  // block tile
constexpr int TM = 8, TN = 8;                // per-thread micro-tile
constexpr int THREADS = (BM / TM) * (BN / TN);  // 256

__global__ void __launch_bounds__(THREADS)
gemm_regtile(const __nv_bfloat16* __restrict__ A, const __nv_bfloat16* __restrict__ B,
             float* __restrict__ C, int M, int N, int K) {
  __shared__ float As[BK][BM];  // transposed: As[k][m]
  __shared__ float Bs[BK][BN];
  const int tid = threadIdx.x;
  const int tx = tid % (BN / TN);  // which 8 columns of the tile
  const int ty = tid / (BN / TN);  // which 8 rows
  const int m0 = blockIdx.y * BM, n0 = blockIdx.x * BN;
  // Loaders: the A tile (128 x 8) and the B tile (8 x 128) are 1024 elements each, 4 per thread.
  const int a_row = tid / 2, a_k = (tid % 2) * 4;
  const int b_k = tid / 32, b_col = (tid % 32) * 4;  // a warp reads 128 consecutive columns

  float acc[TM][TN];
#pragma unroll
  for (int i = 0; i < TM; ++i)
#pragma unroll
    for (int j = 0; j < TN; ++j) acc[i][j] = 0.0f;

  for (int k0 = 0; k0 < K; k0 += BK) {
#pragma unroll
    for (int q = 0; q < 4; ++q) {
      const int gr = m0 + a_row, gk = k0 + a_k + q;
      As[a_k + q][a_row] =
          (gr < M && gk < K) ? __bfloat162float(A[static_cast<size_t>(gr) * K + gk]) : 0.0f;
      const int gk2 = k0 + b_k, gc = n0 + b_col + q;
      Bs[b_k][b_col + q] =
          (gk2 < K && gc < N) ? __bfloat162float(B[static_cast<size_t>(gk2) * N + gc]) : 0.0f;
    }
    __syncthreads();
#pragma unroll
    for (int k = 0; k < BK; ++k) {
      float a[TM], b[TN];
#pragma unroll
      for (int i = 0; i < TM; ++i) a[i] = As[k][ty * TM + i];
#pragma unroll
      for (int j = 0; j < TN; ++j) b[j] = Bs[k][tx * TN + j];
#pragma unroll
      for (int i = 0; i < TM; ++i)
#pragma unroll
        for (int j = 0; j < TN; ++j) acc[i][j] = fmaf(a[i], b[j], acc[i][j]);
    }
    __syncthreads();  // the tiles are overwritten by the next iteration
  }
#pragma unroll
  for (int i = 0; i < TM; ++i) {
    const int r = m0 + ty * TM + i;
    if (r >= M) continue;
#pragma unroll
    for (int j = 0; j < TN; ++j) {
      const int c = n0 + tx * TN + j;
      if (c < N) C[static_cast<size_t>(r) * N + c] = acc[i][j];
    }
  }
}

}  // namespace

extern "C" int lathe_launch(const lathe_args* args) {
  if (args->num_inputs != 2 || args->num_outputs != 1) {
    set_error(args, "gemm_cuda: expects inputs A, B and output C");
    return 1;
  }
  const DLTensor& A = args->inputs[0];
  const DLTensor& B = args->inputs[1];
  const DLTensor& C = args->outputs[0];
  if (!is_matrix(A, kDLBfloat, 16) || !is_matrix(B, kDLBfloat, 16) || !is_matrix(C, kDLFloat, 32)) {
    set_error(args, "gemm_cuda: A, B must be contiguous 2-D bfloat16 and C 2-D float32");
    return 1;
  }
  const int64_t M = A.shape[0], K = A.shape[1], N = B.shape[1];
  if (B.shape[0] != K || C.shape[0] != M || C.shape[1] != N) {
    set_error(args, "gemm_cuda: shapes disagree (A[M,K], B[K,N], C[M,N])");
    return 1;
  }
  if (M > INT32_MAX || N > INT32_MAX || K > INT32_MAX || (M + BM - 1) / BM > 65535) {
    set_error(args, "gemm_cuda: shape too large for this kernel's 32-bit indices / grid");
    return 1;
  }
  if (M == 0 || N == 0) return 0;
  const dim3 grid(static_cast<unsigned>((N + BN - 1) / BN),
                  static_cast<unsigned>((M + BM - 1) / BM));
  gemm_regtile<<<grid, THREADS, 0, static_cast<cudaStream_t>(args->stream)>>>(
      data_of<const __nv_bfloat16>(A), data_of<const __nv_bfloat16>(B), data_of<float>(C),
      static_cast<int>(M), static_cast<int>(N), static_cast<int>(K));
  if (cudaGetLastError() != cudaSuccess) {
    set_error(args, "gemm_cuda: kernel launch failed");
    return 1;
  }
  return 0;
}
