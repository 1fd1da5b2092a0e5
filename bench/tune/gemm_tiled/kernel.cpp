// A blocked GEMM for bench/tune (issue 45): C[M,N] = A[M,K] B[K,N], fp32 row-major, one thread,
// i-k-j inside tiles of TI rows, TK of the reduction and TJ columns (the compiler vectorizes the
// j loop). The tiles decide how much of B stays in cache; the default is the untiled loop.
#include <lathe/abi.h>
#include <stdint.h>

#ifndef TI
#define TI 1024
#endif
#ifndef TK
#define TK 1024
#endif
#ifndef TJ
#define TJ 1024
#endif

static inline int64_t lo(int64_t a, int64_t b) { return a < b ? a : b; }

extern "C" int lathe_launch(const lathe_args* args) {
  const DLTensor& A = args->inputs[0];
  const DLTensor& B = args->inputs[1];
  const int64_t M = A.shape[0], K = A.shape[1], N = B.shape[1];
  const float* a = static_cast<const float*>(A.data);
  const float* b = static_cast<const float*>(B.data);
  float* c = static_cast<float*>(args->outputs[0].data);
  for (int64_t i = 0; i < M * N; ++i) c[i] = 0.0f;
  for (int64_t i0 = 0; i0 < M; i0 += TI)
    for (int64_t k0 = 0; k0 < K; k0 += TK)
      for (int64_t j0 = 0; j0 < N; j0 += TJ) {
        const int64_t i1 = lo(i0 + TI, M), k1 = lo(k0 + TK, K), j1 = lo(j0 + TJ, N);
        for (int64_t i = i0; i < i1; ++i)
          for (int64_t k = k0; k < k1; ++k) {
            const float v = a[i * K + k];
            float* __restrict__ ci = c + i * N;
            const float* __restrict__ bk = b + k * N;
            for (int64_t j = j0; j < j1; ++j) ci[j] += v * bk[j];
          }
      }
  return 0;
}
