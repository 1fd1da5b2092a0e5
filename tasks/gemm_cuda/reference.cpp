// Trusted fp64 oracle for gemm_cuda: C = A · B, A and B bf16 (exact in double), every product and
// sum in double. Inputs are host pointers here; C is a host float64 buffer.
//
// It also runs on the timed 4096³ set (69 G multiply-adds), so it is blocked like a small BLAS,
// single-threaded and portable (built at -O2, no intrinsics):
//  - A and B are widened to double once (bf16 -> fp32 is a 16-bit shift, fp32 -> double exact);
//  - k is cut into KC = 128 blocks and N into NC = 256 blocks; each B block is packed into panels
//    of 4 columns, [NC/4][KC][4] doubles = 256 KiB, which stays in L2 while every 4-row strip of
//    A walks over it;
//  - a 4x4 block of C lives in 16 scalar accumulators across the KC loop (one load of 4 a's and 4
//    b's per 16 multiply-adds), then is added to C; C is revisited once per k block.
// Measured at -O2 on one core of an x86 server: 1024³ in 0.13 s (~8 G multiply-adds/s), so 4096³
// takes ~8-10 s; the ragged set (997 x 1016 x 1032) 0.12 s.
#include <lathe/abi.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <vector>

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

double bf16_to_double(uint16_t h) {
  const uint32_t u = static_cast<uint32_t>(h) << 16;
  float f;
  memcpy(&f, &u, sizeof f);
  return static_cast<double>(f);
}

constexpr int64_t KC = 128;  // k block: a 4-row strip of A over KC is 4 KiB, L1-resident
constexpr int64_t NC = 256;  // n block: the packed B block is KC*NC*8 = 256 KiB, L2-resident

}  // namespace

extern "C" int lathe_reference(const lathe_args* args) {
  if (args->num_inputs != 2 || args->num_outputs != 1) {
    set_error(args, "gemm_cuda reference: expects inputs A, B and output C");
    return 1;
  }
  const DLTensor& A = args->inputs[0];
  const DLTensor& B = args->inputs[1];
  const DLTensor& C = args->outputs[0];
  if (A.ndim != 2 || B.ndim != 2 || C.ndim != 2 || A.dtype.code != kDLBfloat ||
      A.dtype.bits != 16 || B.dtype.code != kDLBfloat || B.dtype.bits != 16 ||
      C.dtype.bits != 64) {
    set_error(args, "gemm_cuda reference: A, B must be 2-D bfloat16 and C 2-D float64");
    return 1;
  }
  const int64_t M = A.shape[0], K = A.shape[1], N = B.shape[1];
  if (B.shape[0] != K || C.shape[0] != M || C.shape[1] != N) {
    set_error(args, "gemm_cuda reference: shapes disagree (A[M,K], B[K,N], C[M,N])");
    return 1;
  }
  const uint16_t* a16 = data_of<const uint16_t>(A);
  const uint16_t* b16 = data_of<const uint16_t>(B);
  double* c = data_of<double>(C);
  for (int64_t i = 0; i < M * N; ++i) c[i] = 0.0;
  if (M == 0 || N == 0 || K == 0) return 0;

  std::vector<double> a(static_cast<size_t>(M * K));
  for (int64_t i = 0; i < M * K; ++i) a[i] = bf16_to_double(a16[i]);
  std::vector<double> bp(static_cast<size_t>(KC * NC));  // packed B block: [NC/4][KC][4]

  for (int64_t k0 = 0; k0 < K; k0 += KC) {
    const int64_t kc = K - k0 < KC ? K - k0 : KC;
    for (int64_t j0 = 0; j0 < N; j0 += NC) {
      const int64_t nc = N - j0 < NC ? N - j0 : NC;
      const int64_t panels = (nc + 3) / 4;
      for (int64_t p = 0; p < panels; ++p)  // pack, zero-padding the last panel's missing columns
        for (int64_t k = 0; k < kc; ++k)
          for (int64_t q = 0; q < 4; ++q) {
            const int64_t j = j0 + p * 4 + q;
            bp[(p * KC + k) * 4 + q] = j < N ? bf16_to_double(b16[(k0 + k) * N + j]) : 0.0;
          }
      // Row blocks write disjoint rows of c: spread over the cores (lathe builds references
      // with -fopenmp; at 4096^3 one core needs about 10 s per trial).
#pragma omp parallel for schedule(static)
      for (int64_t i0 = 0; i0 < M; i0 += 4) {
        const int64_t mr = M - i0 < 4 ? M - i0 : 4;
        // Rows past M repeat the last row: their sums are computed and discarded.
        const double* ar[4];
        for (int64_t r = 0; r < 4; ++r) ar[r] = &a[(i0 + (r < mr ? r : mr - 1)) * K + k0];
        for (int64_t p = 0; p < panels; ++p) {
          const double* b = &bp[p * KC * 4];
          double c00 = 0, c01 = 0, c02 = 0, c03 = 0, c10 = 0, c11 = 0, c12 = 0, c13 = 0;
          double c20 = 0, c21 = 0, c22 = 0, c23 = 0, c30 = 0, c31 = 0, c32 = 0, c33 = 0;
          for (int64_t k = 0; k < kc; ++k) {
            const double b0 = b[k * 4 + 0], b1 = b[k * 4 + 1], b2 = b[k * 4 + 2],
                         b3 = b[k * 4 + 3];
            const double a0 = ar[0][k], a1 = ar[1][k], a2 = ar[2][k], a3 = ar[3][k];
            c00 += a0 * b0; c01 += a0 * b1; c02 += a0 * b2; c03 += a0 * b3;
            c10 += a1 * b0; c11 += a1 * b1; c12 += a1 * b2; c13 += a1 * b3;
            c20 += a2 * b0; c21 += a2 * b1; c22 += a2 * b2; c23 += a2 * b3;
            c30 += a3 * b0; c31 += a3 * b1; c32 += a3 * b2; c33 += a3 * b3;
          }
          const double acc[4][4] = {{c00, c01, c02, c03},
                                    {c10, c11, c12, c13},
                                    {c20, c21, c22, c23},
                                    {c30, c31, c32, c33}};
          for (int64_t r = 0; r < mr; ++r)
            for (int64_t q = 0; q < 4; ++q) {
              const int64_t j = j0 + p * 4 + q;
              if (j < N) c[(i0 + r) * N + j] += acc[r][q];
            }
        }
      }
    }
  }
  return 0;
}
