// bench/tune on CUDA: C[M,N] (fp32) = A[M,K] (bf16) · B[K,N] (bf16), fp32 accumulation, a
// register-tiled FFMA kernel whose tiles are macros (kernel.toml's [tune]). A block of
// (BM/TM) x (BN/TN) threads computes a BM x BN tile of C, each thread a TM x TN micro-tile in
// registers (TM = TN = MICRO); per k-slice of BK the block stages A (transposed, As[k][m]) and B in
// shared memory. Out-of-range elements load as zero and out-of-range
// outputs are not stored, so any M, N, K works. The defaults are tasks/gemm_cuda's stage 2.
#include <cuda_bf16.h>
#include <cuda_runtime.h>
#include <lathe/abi.h>
#include <stddef.h>
#include <stdint.h>

#ifndef BM
#define BM 128
#endif
#ifndef BN
#define BN 128
#endif
#ifndef MICRO
#define MICRO 8
#endif
#define TM MICRO
#define TN MICRO
#ifndef BK
#define BK 8
#endif

namespace {

constexpr int NTHREADS = (BM / TM) * (BN / TN);
static_assert(BM % TM == 0 && BN % TN == 0, "the block tile must hold whole micro-tiles");
static_assert(NTHREADS >= 32 && NTHREADS <= 1024, "a block has 32..1024 threads");

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

__global__ void __launch_bounds__(NTHREADS)
gemm_tiles(const __nv_bfloat16* __restrict__ A, const __nv_bfloat16* __restrict__ B,
           float* __restrict__ C, int M, int N, int K) {
  __shared__ float As[BK][BM];
  __shared__ float Bs[BK][BN];
  const int tid = threadIdx.x;
  const int tx = tid % (BN / TN), ty = tid / (BN / TN);
  const int m0 = blockIdx.y * BM, n0 = blockIdx.x * BN;

  float acc[TM][TN];
#pragma unroll
  for (int i = 0; i < TM; ++i)
#pragma unroll
    for (int j = 0; j < TN; ++j) acc[i][j] = 0.0f;

  for (int k0 = 0; k0 < K; k0 += BK) {
    // A's tile: consecutive threads read consecutive k of one row (BK wide), stored transposed.
#pragma unroll
    for (int e = tid; e < BM * BK; e += NTHREADS) {
      const int m = e / BK, k = e % BK, gm = m0 + m, gk = k0 + k;
      As[k][m] = (gm < M && gk < K) ? __bfloat162float(A[static_cast<size_t>(gm) * K + gk]) : 0.0f;
    }
    // B's tile: consecutive threads read consecutive columns of one row of B (coalesced).
#pragma unroll
    for (int e = tid; e < BN * BK; e += NTHREADS) {
      const int k = e / BN, n = e % BN, gk = k0 + k, gn = n0 + n;
      Bs[k][n] = (gk < K && gn < N) ? __bfloat162float(B[static_cast<size_t>(gk) * N + gn]) : 0.0f;
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
    __syncthreads();
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
    set_error(args, "gemm_tiles: expects inputs A, B and output C");
    return 1;
  }
  const DLTensor& A = args->inputs[0];
  const DLTensor& B = args->inputs[1];
  const DLTensor& C = args->outputs[0];
  if (!is_matrix(A, kDLBfloat, 16) || !is_matrix(B, kDLBfloat, 16) || !is_matrix(C, kDLFloat, 32)) {
    set_error(args, "gemm_tiles: A, B must be contiguous 2-D bfloat16 and C 2-D float32");
    return 1;
  }
  const int64_t M = A.shape[0], K = A.shape[1], N = B.shape[1];
  if (B.shape[0] != K || C.shape[0] != M || C.shape[1] != N) {
    set_error(args, "gemm_tiles: shapes disagree (A[M,K], B[K,N], C[M,N])");
    return 1;
  }
  if (M > INT32_MAX || N > INT32_MAX || K > INT32_MAX || (M + BM - 1) / BM > 65535) {
    set_error(args, "gemm_tiles: shape too large for this kernel's 32-bit indices / grid");
    return 1;
  }
  if (M == 0 || N == 0) return 0;
  const dim3 grid(static_cast<unsigned>((N + BN - 1) / BN), static_cast<unsigned>((M + BM - 1) / BM));
  gemm_tiles<<<grid, NTHREADS, 0, static_cast<cudaStream_t>(args->stream)>>>(
      data_of<const __nv_bfloat16>(A), data_of<const __nv_bfloat16>(B), data_of<float>(C),
      static_cast<int>(M), static_cast<int>(N), static_cast<int>(K));
  if (cudaGetLastError() != cudaSuccess) {
    set_error(args, "gemm_tiles: kernel launch failed");
    return 1;
  }
  return 0;
}
