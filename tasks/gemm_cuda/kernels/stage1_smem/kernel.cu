// Stage 1 GEMM: C[M,N] (fp32) = A[M,K] (bf16) · B[K,N] (bf16), fp32 accumulation.
//
// Adds shared-memory tiling to the naive kernel. A block of 32x32 threads computes a 32x32 tile of
// C, one element per thread, and walks K in steps of TILE = 32: each thread loads one element of
// the A tile and one of the B tile into shared memory (converted to fp32 once), the block syncs,
// and every thread does 32 multiply-adds from shared memory. Each global element is now loaded
// once per block instead of once per thread: 32x less global traffic. TILE = 32 makes a warp one
// row of the tile, so As[ty][k] is a broadcast and Bs[k][tx] hits 32 distinct banks. Out-of-range
// elements (ragged M, N, K) are loaded as zeros, which add nothing; any M, N, K works.
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

constexpr int TILE = 32;

__global__ void __launch_bounds__(TILE * TILE)
gemm_smem(const __nv_bfloat16* __restrict__ A, const __nv_bfloat16* __restrict__ B,
          float* __restrict__ C, int M, int N, int K) {
  __shared__ float As[TILE][TILE];
  __shared__ float Bs[TILE][TILE];
  const int tx = threadIdx.x, ty = threadIdx.y;
  const int row = blockIdx.y * TILE + ty;
  const int col = blockIdx.x * TILE + tx;
  float acc = 0.0f;
  for (int k0 = 0; k0 < K; k0 += TILE) {
    // Coalesced along a row of each tile: a warp (fixed ty) reads 32 consecutive elements.
    As[ty][tx] = (row < M && k0 + tx < K)
                     ? __bfloat162float(A[static_cast<size_t>(row) * K + k0 + tx]) : 0.0f;
    Bs[ty][tx] = (k0 + ty < K && col < N)
                     ? __bfloat162float(B[static_cast<size_t>(k0 + ty) * N + col]) : 0.0f;
    __syncthreads();
#pragma unroll
    for (int k = 0; k < TILE; ++k) acc = fmaf(As[ty][k], Bs[k][tx], acc);
    __syncthreads();  // the tile is overwritten by the next iteration
  }
  if (row < M && col < N) C[static_cast<size_t>(row) * N + col] = acc;
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
  if (M > INT32_MAX || N > INT32_MAX || K > INT32_MAX || (M + TILE - 1) / TILE > 65535) {
    set_error(args, "gemm_cuda: shape too large for this kernel's 32-bit indices / grid");
    return 1;
  }
  if (M == 0 || N == 0) return 0;
  const dim3 block(TILE, TILE);
  const dim3 grid(static_cast<unsigned>((N + TILE - 1) / TILE),
                  static_cast<unsigned>((M + TILE - 1) / TILE));
  gemm_smem<<<grid, block, 0, static_cast<cudaStream_t>(args->stream)>>>(
      data_of<const __nv_bfloat16>(A), data_of<const __nv_bfloat16>(B), data_of<float>(C),
      static_cast<int>(M), static_cast<int>(N), static_cast<int>(K));
  if (cudaGetLastError() != cudaSuccess) {
    set_error(args, "gemm_cuda: kernel launch failed");
    return 1;
  }
  return 0;
}
