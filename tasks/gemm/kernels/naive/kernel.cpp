// Naive GEMM, C[M,N] = A[M,K] · B[K,N], fp32 row-major.
//
// Deliberately unoptimized: i-j-k order with a scalar fp32 accumulator, so the inner loop walks a
// column of B with stride N (one cache line per multiply-add once B outgrows L1). Everything an
// optimized kernel does (loop reordering, blocking, packing, register tiling, SIMD, threads) is
// absent; this is what a lineage starts from.
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
  const float* a = data_of<const float>(A);
  const float* b = data_of<const float>(B);
  float* c = data_of<float>(C);

  for (int64_t i = 0; i < M; ++i) {
    for (int64_t j = 0; j < N; ++j) {
      float sum = 0.0f;
      for (int64_t k = 0; k < K; ++k) sum += a[i * K + k] * b[k * N + j];
      c[i * N + j] = sum;
    }
  }
  return 0;
}
