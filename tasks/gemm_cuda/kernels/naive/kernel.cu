// Naive GEMM on the GPU: C[M,N] (fp32) = A[M,K] (bf16) · B[K,N] (bf16), fp32 accumulation.
//
// One thread per element of C, each walking its row of A and its column of B in global memory.
// threadIdx.x runs along N, so a warp reads 32 consecutive elements of a row of B (one coalesced
// 64-byte access) and one element of A that all its threads share. Nothing is reused through
// shared memory or registers: every multiply-add costs two loads (mostly served by L1/L2). This
// is where the lineage starts; it handles any M, N, K.
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

__global__ void gemm_naive(const __nv_bfloat16* __restrict__ A, const __nv_bfloat16* __restrict__ B,
                           float* __restrict__ C, int M, int N, int K) {
  const int col = blockIdx.x * blockDim.x + threadIdx.x;
  const int row = blockIdx.y * blockDim.y + threadIdx.y;
  if (row >= M || col >= N) return;
  const __nv_bfloat16* a = A + static_cast<size_t>(row) * K;
  float acc = 0.0f;
  for (int k = 0; k < K; ++k)
    acc = fmaf(__bfloat162float(a[k]), __bfloat162float(B[static_cast<size_t>(k) * N + col]), acc);
  C[static_cast<size_t>(row) * N + col] = acc;
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
  if (M > INT32_MAX || N > INT32_MAX || K > INT32_MAX || (M + 7) / 8 > 65535) {
    set_error(args, "gemm_cuda: shape too large for this kernel's 32-bit indices / grid");
    return 1;
  }
  if (M == 0 || N == 0) return 0;
  const dim3 block(32, 8);  // 256 threads: a warp spans 32 columns of one row
  const dim3 grid(static_cast<unsigned>((N + 31) / 32), static_cast<unsigned>((M + 7) / 8));
  gemm_naive<<<grid, block, 0, static_cast<cudaStream_t>(args->stream)>>>(
      data_of<const __nv_bfloat16>(A), data_of<const __nv_bfloat16>(B), data_of<float>(C),
      static_cast<int>(M), static_cast<int>(N), static_cast<int>(K));
  if (cudaGetLastError() != cudaSuccess) {
    set_error(args, "gemm_cuda: kernel launch failed");
    return 1;
  }
  return 0;
}
