// Baseline GEMM: C[M,N] (fp32) = A[M,K] (bf16) · B[K,N] (bf16) through cuBLAS (cublasGemmEx,
// CUBLAS_COMPUTE_32F: bf16 products, fp32 accumulation and output; cuBLAS picks its Hopper
// kernels, wgmma included).
//
// cuBLAS is column-major. A row-major C[M,N] is the column-major C^T[N,M], and C^T = B^T · A^T,
// where the row-major B[K,N] and A[M,K] are exactly the column-major B^T (N x K, ld N) and A^T
// (K x M, ld K). So one GemmEx with m = N, n = M, k = K, "A" = B, "B" = A, no transposes.
// alpha = 1, beta = 0: every element of C is written, its poisoned contents are never read.
//
// The handle is created once in lathe_init (not timed). Each launch binds it to args->stream and
// then to args->workspace: cublasSetStream resets the workspace to cuBLAS's own pool, so the order
// matters, and a caller-owned workspace keeps cuBLAS from allocating inside a captured graph.
#include <cuda_bf16.h>
#include <cublas_v2.h>
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

constexpr size_t kWorkspaceBytes = size_t(32) << 20;  // 32 MiB, what cuBLAS asks for on Hopper

cublasHandle_t g_handle = nullptr;

}  // namespace

extern "C" int lathe_init(void) {
  if (g_handle != nullptr) return 0;
  return cublasCreate(&g_handle) == CUBLAS_STATUS_SUCCESS ? 0 : 1;
}

extern "C" size_t lathe_workspace_bytes(const lathe_args*) { return kWorkspaceBytes; }

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
  if (M > INT32_MAX || N > INT32_MAX || K > INT32_MAX) {
    set_error(args, "gemm_cuda: a dimension exceeds cuBLAS's 32-bit index");
    return 1;
  }
  if (g_handle == nullptr && lathe_init() != 0) {
    set_error(args, "gemm_cuda: cublasCreate failed");
    return 1;
  }
  if (M == 0 || N == 0) return 0;
  cudaStream_t stream = static_cast<cudaStream_t>(args->stream);
  if (K == 0) {  // GemmEx with k = 0 only scales C by beta; C is poisoned, so write zeros
    return cudaMemsetAsync(data_of<float>(C), 0, static_cast<size_t>(M * N) * sizeof(float),
                           stream) == cudaSuccess ? 0 : 1;
  }
  // Only when they change: setting them on every call measured 0.50 ms per 4096^3 call in
  // lathe's timing loop against 0.18 ms for cuBLAS in a bare harness (H200, 2026-11-29).
  static cudaStream_t set_stream = nullptr;
  static void* set_workspace = nullptr;
  static bool configured = false;
  if (!configured || stream != set_stream || args->workspace != set_workspace) {
    if (cublasSetStream(g_handle, stream) != CUBLAS_STATUS_SUCCESS ||
        (args->workspace != nullptr && args->workspace_bytes > 0 &&
         cublasSetWorkspace(g_handle, args->workspace, args->workspace_bytes) !=
             CUBLAS_STATUS_SUCCESS)) {
      set_error(args, "gemm_cuda: cublasSetStream / cublasSetWorkspace failed");
      return 1;
    }
    set_stream = stream;
    set_workspace = args->workspace;
    configured = true;
  }
  const float alpha = 1.0f, beta = 0.0f;
  const cublasStatus_t st = cublasGemmEx(
      g_handle, CUBLAS_OP_N, CUBLAS_OP_N, static_cast<int>(N), static_cast<int>(M),
      static_cast<int>(K), &alpha, data_of<const __nv_bfloat16>(B), CUDA_R_16BF,
      static_cast<int>(N), data_of<const __nv_bfloat16>(A), CUDA_R_16BF, static_cast<int>(K),
      &beta, data_of<float>(C), CUDA_R_32F, static_cast<int>(N), CUBLAS_COMPUTE_32F,
      CUBLAS_GEMM_DEFAULT);
  if (st != CUBLAS_STATUS_SUCCESS) {
    set_error(args, "gemm_cuda: cublasGemmEx failed");
    return 1;
  }
  return 0;
}
