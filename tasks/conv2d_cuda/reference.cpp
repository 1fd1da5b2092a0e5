// Trusted fp64 oracle for conv2d_cuda: Y[n,p,q,k] = sum_{r,s,c} X[n,p+r-1,q+s-1,c] * Wt[k,r,s,c]
// (taps outside the image are zero; stride 1, so Y is N x H x W x K). X and Wt are bf16 (exact
// in double), every product and sum in double; Y is a host float64 buffer.
//
// The timed set is 59 G multiply-adds, so the loop is blocked like gemm_cuda's reference
// (portable, no intrinsics, built at -O3 with OpenMP): the filter is widened to double once
// (K x 9C, KRSC, so a filter row is the j-contiguous column of the implicit GEMM), and for each
// group of 4 pixels of one image row the 4 im2col rows (9C doubles each, zeros in the padding)
// are gathered once; then 4 x 4 blocks of outputs (4 pixels x 4 channels) accumulate in 16
// scalars over j, one load of 4 a's and 4 w's per 16 multiply-adds. Rows of pixels are spread
// over the cores (each writes its own outputs). The GPU reference (reference.cu) serves the
// large sets on the device; this one checks it on the small set.
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

constexpr int64_t PB = 4;  // pixels per block (along q)
constexpr int64_t KB = 4;  // output channels per block

}  // namespace

extern "C" int lathe_reference(const lathe_args* args) {
  if (args->num_inputs != 2 || args->num_outputs != 1) {
    set_error(args, "conv2d_cuda reference: expects inputs X, Wt and output Y");
    return 1;
  }
  const DLTensor& X = args->inputs[0];
  const DLTensor& Wt = args->inputs[1];
  const DLTensor& Y = args->outputs[0];
  if (X.ndim != 4 || Wt.ndim != 4 || Y.ndim != 4 || X.dtype.code != kDLBfloat ||
      X.dtype.bits != 16 || Wt.dtype.code != kDLBfloat || Wt.dtype.bits != 16 ||
      Y.dtype.bits != 64) {
    set_error(args, "conv2d_cuda reference: X, Wt must be 4-D bfloat16 and Y 4-D float64");
    return 1;
  }
  const int64_t N = X.shape[0], H = X.shape[1], W = X.shape[2], C = X.shape[3], K = Wt.shape[0];
  if (Wt.shape[1] != 3 || Wt.shape[2] != 3 || Wt.shape[3] != C || Y.shape[0] != N ||
      Y.shape[1] != H || Y.shape[2] != W || Y.shape[3] != K) {
    set_error(args, "conv2d_cuda reference: shapes disagree (X[N,H,W,C], Wt[K,3,3,C], Y[N,H,W,K])");
    return 1;
  }
  const uint16_t* x16 = data_of<const uint16_t>(X);
  const uint16_t* w16 = data_of<const uint16_t>(Wt);
  double* y = data_of<double>(Y);
  const int64_t J = 9 * C;
  if (N * H * W == 0 || K == 0) return 0;

  std::vector<double> w(static_cast<size_t>(K * J));
  for (int64_t i = 0; i < K * J; ++i) w[i] = bf16_to_double(w16[i]);

#pragma omp parallel
  {
    std::vector<double> a(static_cast<size_t>(PB * J));  // im2col rows of PB pixels
#pragma omp for schedule(static)
    for (int64_t np = 0; np < N * H; ++np) {
      const int64_t n = np / H, p = np % H;
      for (int64_t q0 = 0; q0 < W; q0 += PB) {
        const int64_t pc = W - q0 < PB ? W - q0 : PB;
        // Gather; pixels past W repeat the last one (their sums are computed and dropped).
        for (int64_t i = 0; i < PB; ++i) {
          const int64_t q = q0 + (i < pc ? i : pc - 1);
          double* row = &a[i * J];
          for (int64_t r = 0; r < 3; ++r)
            for (int64_t s = 0; s < 3; ++s) {
              const int64_t h = p + r - 1, xq = q + s - 1;
              double* dst = row + (r * 3 + s) * C;
              if (h < 0 || h >= H || xq < 0 || xq >= W) {
                for (int64_t c = 0; c < C; ++c) dst[c] = 0.0;
              } else {
                const uint16_t* src = x16 + ((n * H + h) * W + xq) * C;
                for (int64_t c = 0; c < C; ++c) dst[c] = bf16_to_double(src[c]);
              }
            }
        }
        for (int64_t k0 = 0; k0 < K; k0 += KB) {
          const int64_t kc = K - k0 < KB ? K - k0 : KB;
          // Channels past K repeat the last one, likewise.
          const double* wr[KB];
          for (int64_t t = 0; t < KB; ++t) wr[t] = &w[(k0 + (t < kc ? t : kc - 1)) * J];
          const double *a0 = &a[0], *a1 = &a[J], *a2 = &a[2 * J], *a3 = &a[3 * J];
          double c00 = 0, c01 = 0, c02 = 0, c03 = 0, c10 = 0, c11 = 0, c12 = 0, c13 = 0;
          double c20 = 0, c21 = 0, c22 = 0, c23 = 0, c30 = 0, c31 = 0, c32 = 0, c33 = 0;
          for (int64_t j = 0; j < J; ++j) {
            const double w0 = wr[0][j], w1 = wr[1][j], w2 = wr[2][j], w3 = wr[3][j];
            const double x0 = a0[j], x1 = a1[j], x2 = a2[j], x3 = a3[j];
            c00 += x0 * w0; c01 += x0 * w1; c02 += x0 * w2; c03 += x0 * w3;
            c10 += x1 * w0; c11 += x1 * w1; c12 += x1 * w2; c13 += x1 * w3;
            c20 += x2 * w0; c21 += x2 * w1; c22 += x2 * w2; c23 += x2 * w3;
            c30 += x3 * w0; c31 += x3 * w1; c32 += x3 * w2; c33 += x3 * w3;
          }
          const double acc[PB][KB] = {{c00, c01, c02, c03},
                                      {c10, c11, c12, c13},
                                      {c20, c21, c22, c23},
                                      {c30, c31, c32, c33}};
          for (int64_t i = 0; i < pc; ++i)
            for (int64_t t = 0; t < kc; ++t) y[((n * H + p) * W + q0 + i) * K + k0 + t] = acc[i][t];
        }
      }
    }
  }
  return 0;
}
