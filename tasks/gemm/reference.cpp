// Trusted fp64 oracle for gemm: C = A · B with every product and sum in double.
//
// It runs for every correctness trial (several seeds × every shape set), so it is written to be
// fast enough: i-k-j order keeps the inner loop unit-stride over a row of B and a row of C (the
// row of C, N doubles, stays in L1 across the k loop), which the compiler vectorizes at -O2.
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

template <class T>
T* data_of(const DLTensor& t) {
  return reinterpret_cast<T*>(static_cast<char*>(t.data) + t.byte_offset);
}

}  // namespace

extern "C" int lathe_reference(const lathe_args* args) {
  if (args->num_inputs != 2 || args->num_outputs != 1) {
    set_error(args, "gemm reference: expects inputs A, B and output C");
    return 1;
  }
  const DLTensor& A = args->inputs[0];
  const DLTensor& B = args->inputs[1];
  const DLTensor& C = args->outputs[0];
  if (A.ndim != 2 || B.ndim != 2 || C.ndim != 2 || A.dtype.bits != 32 || B.dtype.bits != 32 ||
      C.dtype.bits != 64) {
    set_error(args, "gemm reference: A, B must be 2-D float32 and C 2-D float64");
    return 1;
  }
  const int64_t M = A.shape[0], K = A.shape[1], N = B.shape[1];
  if (B.shape[0] != K || C.shape[0] != M || C.shape[1] != N) {
    set_error(args, "gemm reference: shapes disagree (A[M,K], B[K,N], C[M,N])");
    return 1;
  }
  const float* a = data_of<const float>(A);
  const float* b = data_of<const float>(B);
  double* c = data_of<double>(C);
  for (int64_t i = 0; i < M; ++i) {
    double* ci = c + i * N;
    for (int64_t j = 0; j < N; ++j) ci[j] = 0.0;
    for (int64_t k = 0; k < K; ++k) {
      const double aik = a[i * K + k];
      const float* bk = b + k * N;
      for (int64_t j = 0; j < N; ++j) ci[j] += aik * static_cast<double>(bk[j]);
    }
  }
  return 0;
}
