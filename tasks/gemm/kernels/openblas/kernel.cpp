// Baseline GEMM: C = A · B through OpenBLAS's cblas_sgemm (row-major, no transposes,
// alpha = 1, beta = 0, so every element of C is written and C's poisoned contents are ignored).
#include <cblas.h>
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

bool is_f32_matrix(const DLTensor& t) {
  if (t.ndim != 2 || t.dtype.code != kDLFloat || t.dtype.bits != 32 || t.dtype.lanes != 1)
    return false;
  return t.strides == nullptr || (t.strides[1] == 1 && t.strides[0] == t.shape[1]);
}

template <class T>
T* data_of(const DLTensor& t) {
  return reinterpret_cast<T*>(static_cast<char*>(t.data) + t.byte_offset);
}

}  // namespace

extern "C" int lathe_launch(const lathe_args* args) {
  if (args->num_inputs != 2 || args->num_outputs != 1) {
    set_error(args, "gemm: expects inputs A, B and output C");
    return 1;
  }
  const DLTensor& A = args->inputs[0];
  const DLTensor& B = args->inputs[1];
  const DLTensor& C = args->outputs[0];
  if (!is_f32_matrix(A) || !is_f32_matrix(B) || !is_f32_matrix(C)) {
    set_error(args, "gemm: A, B, C must be contiguous 2-D float32");
    return 1;
  }
  const int64_t M = A.shape[0], K = A.shape[1], N = B.shape[1];
  if (B.shape[0] != K || C.shape[0] != M || C.shape[1] != N) {
    set_error(args, "gemm: shapes disagree (A[M,K], B[K,N], C[M,N])");
    return 1;
  }
  // blasint is 32-bit in Debian's OpenBLAS (no INTERFACE64): refuse what it cannot index.
  if (M > INT32_MAX || N > INT32_MAX || K > INT32_MAX) {
    set_error(args, "gemm: a dimension exceeds OpenBLAS's 32-bit index");
    return 1;
  }
  float* c = data_of<float>(C);
  if (K == 0) {  // sgemm with K = 0 scales C by beta; be explicit, C is poisoned.
    for (int64_t i = 0; i < M * N; ++i) c[i] = 0.0f;
    return 0;
  }
  if (M == 0 || N == 0) return 0;
  cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, static_cast<blasint>(M),
              static_cast<blasint>(N), static_cast<blasint>(K), 1.0f, data_of<const float>(A),
              static_cast<blasint>(K), data_of<const float>(B), static_cast<blasint>(N), 0.0f, c,
              static_cast<blasint>(N));
  return 0;
}
