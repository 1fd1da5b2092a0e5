// Expert layernorm for x86-64-v3 (AVX2 + FMA), fp32:
//   Y[r,c] = (X[r,c] - mean_r) * rstd_r * gamma[c] + beta[c],  rstd_r = 1 / sqrt(var_r + eps),
// with the biased variance, as the task's reference.
//
// Mechanisms:
//   - OpenMP over rows (static split): rows are independent, gamma and beta are shared read-only;
//   - three 8-lane AVX2 passes per row, each with a masked vector tail (vmaskmovps) for the
//     C % 8 leftover columns, so the ragged 4099-column set stays vectorized:
//       1. the sum, in four independent vector accumulators (32 partial sums: FP-add latency is
//          hidden, and the fp32 rounding of the sum grows with C/32 terms, not C);
//       2. the sum of squared deviations from that mean, again in four accumulators;
//       3. y = fma((x - mean) * rstd, gamma, beta).
//     Only pass 1 reads X from DRAM: a row is 4 KB at C = 1024 (16 KB at C = 4099), so passes 2
//     and 3 read it from L1, and gamma/beta (4 KB each) stay in L1 across rows.
// Why two passes for the variance and not E[x^2] - mean^2 in one: the task shifts X by up to 1 at
// scale 0.25 (mean 1, std 0.25), where the one-pass formula multiplies the fp32 rounding of the
// statistics by E[x^2] / var ~ 17 against a task nerr of 1e-5; the deviation form has no
// cancellation and costs one pass over L1-resident data.
// Measured with `lathe eval layernorm expert` on the 2-core VM (4096 x 1024 set, 2 threads, a
// shared machine): 1.8-2.5 ms against 12.8-12.9 ms for the naive kernel (5.3x-6.9x over two
// runs), 50-71% of the task's roofline floor. Plain stores on purpose: non-temporal stores of Y
// measured 1.15 ms, 109% of the floor. The timed slot (16 MB X + 16 MB Y) is the L3's size, so the
// gate times with one slot, and with Y bypassing the cache X most likely stays in L3 from one call
// to the next: a gain of the harness, not of the kernel.
#include <immintrin.h>
#include <lathe/abi.h>
#include <math.h>
#include <stddef.h>
#include <stdint.h>

namespace {

void set_error(const lathe_args* a, const char* msg) {
  if (a->error == nullptr || a->error_bytes == 0) return;
  size_t i = 0;
  for (; msg[i] != '\0' && i + 1 < a->error_bytes; ++i) a->error[i] = msg[i];
  a->error[i] = '\0';
}

bool is_f32(const DLTensor& t, int ndim) {
  if (t.ndim != ndim || t.dtype.code != kDLFloat || t.dtype.bits != 32 || t.dtype.lanes != 1)
    return false;
  if (t.strides == nullptr) return true;
  int64_t expect = 1;
  for (int d = ndim - 1; d >= 0; --d) {
    if (t.strides[d] != expect) return false;
    expect *= t.shape[d];
  }
  return true;
}

template <class T>
T* data_of(const DLTensor& t) {
  return reinterpret_cast<T*>(static_cast<char*>(t.data) + t.byte_offset);
}

inline float hsum(__m256 v) {
  __m128 s = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
  s = _mm_add_ps(s, _mm_movehl_ps(s, s));
  s = _mm_add_ss(s, _mm_movehdup_ps(s));
  return _mm_cvtss_f32(s);
}

// Lanes 0 .. rest-1 set (rest in 1 .. 7): masked-off lanes are neither read nor written.
inline __m256i tail_mask(int64_t rest) {
  return _mm256_cmpgt_epi32(_mm256_set1_epi32(static_cast<int>(rest)),
                            _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7));
}

float row_sum(const float* x, int64_t n) {
  __m256 a0 = _mm256_setzero_ps(), a1 = a0, a2 = a0, a3 = a0;
  int64_t c = 0;
  for (; c + 32 <= n; c += 32) {
    a0 = _mm256_add_ps(a0, _mm256_loadu_ps(x + c));
    a1 = _mm256_add_ps(a1, _mm256_loadu_ps(x + c + 8));
    a2 = _mm256_add_ps(a2, _mm256_loadu_ps(x + c + 16));
    a3 = _mm256_add_ps(a3, _mm256_loadu_ps(x + c + 24));
  }
  for (; c + 8 <= n; c += 8) a0 = _mm256_add_ps(a0, _mm256_loadu_ps(x + c));
  if (c < n) a1 = _mm256_add_ps(a1, _mm256_maskload_ps(x + c, tail_mask(n - c)));  // 0 elsewhere
  return hsum(_mm256_add_ps(_mm256_add_ps(a0, a1), _mm256_add_ps(a2, a3)));
}

float row_sq_dev(const float* x, int64_t n, float mean) {
  const __m256 m = _mm256_set1_ps(mean);
  __m256 a0 = _mm256_setzero_ps(), a1 = a0, a2 = a0, a3 = a0;
  int64_t c = 0;
  for (; c + 32 <= n; c += 32) {
    const __m256 d0 = _mm256_sub_ps(_mm256_loadu_ps(x + c), m);
    const __m256 d1 = _mm256_sub_ps(_mm256_loadu_ps(x + c + 8), m);
    const __m256 d2 = _mm256_sub_ps(_mm256_loadu_ps(x + c + 16), m);
    const __m256 d3 = _mm256_sub_ps(_mm256_loadu_ps(x + c + 24), m);
    a0 = _mm256_fmadd_ps(d0, d0, a0);
    a1 = _mm256_fmadd_ps(d1, d1, a1);
    a2 = _mm256_fmadd_ps(d2, d2, a2);
    a3 = _mm256_fmadd_ps(d3, d3, a3);
  }
  for (; c + 8 <= n; c += 8) {
    const __m256 d = _mm256_sub_ps(_mm256_loadu_ps(x + c), m);
    a0 = _mm256_fmadd_ps(d, d, a0);
  }
  if (c < n) {
    const __m256i mask = tail_mask(n - c);
    // Masked-off lanes load 0, whose deviation is -mean: zero them before squaring.
    const __m256 d = _mm256_and_ps(_mm256_sub_ps(_mm256_maskload_ps(x + c, mask), m),
                                   _mm256_castsi256_ps(mask));
    a1 = _mm256_fmadd_ps(d, d, a1);
  }
  return hsum(_mm256_add_ps(_mm256_add_ps(a0, a1), _mm256_add_ps(a2, a3)));
}

void normalize_row(const float* x, const float* g, const float* b, float* y, int64_t n, float mean,
                   float rstd) {
  const __m256 m = _mm256_set1_ps(mean), s = _mm256_set1_ps(rstd);
  int64_t c = 0;
  for (; c + 16 <= n; c += 16) {
    const __m256 h0 = _mm256_mul_ps(_mm256_sub_ps(_mm256_loadu_ps(x + c), m), s);
    const __m256 h1 = _mm256_mul_ps(_mm256_sub_ps(_mm256_loadu_ps(x + c + 8), m), s);
    _mm256_storeu_ps(y + c, _mm256_fmadd_ps(h0, _mm256_loadu_ps(g + c), _mm256_loadu_ps(b + c)));
    _mm256_storeu_ps(y + c + 8, _mm256_fmadd_ps(h1, _mm256_loadu_ps(g + c + 8),
                                                _mm256_loadu_ps(b + c + 8)));
  }
  for (; c + 8 <= n; c += 8) {
    const __m256 h = _mm256_mul_ps(_mm256_sub_ps(_mm256_loadu_ps(x + c), m), s);
    _mm256_storeu_ps(y + c, _mm256_fmadd_ps(h, _mm256_loadu_ps(g + c), _mm256_loadu_ps(b + c)));
  }
  if (c < n) {
    const __m256i mask = tail_mask(n - c);
    const __m256 h = _mm256_mul_ps(_mm256_sub_ps(_mm256_maskload_ps(x + c, mask), m), s);
    _mm256_maskstore_ps(y + c, mask,
                        _mm256_fmadd_ps(h, _mm256_maskload_ps(g + c, mask),
                                        _mm256_maskload_ps(b + c, mask)));
  }
}

}  // namespace

extern "C" int lathe_launch(const lathe_args* args) {
  if (args->num_inputs != 3 || args->num_outputs != 1 || args->num_scalars != 1) {
    set_error(args, "layernorm: expects inputs X, gamma, beta, scalar eps and output Y");
    return 1;
  }
  const DLTensor& X = args->inputs[0];
  const DLTensor& G = args->inputs[1];
  const DLTensor& B = args->inputs[2];
  const DLTensor& Y = args->outputs[0];
  if (!is_f32(X, 2) || !is_f32(G, 1) || !is_f32(B, 1) || !is_f32(Y, 2)) {
    set_error(args, "layernorm: X, Y must be contiguous 2-D and gamma, beta 1-D float32");
    return 1;
  }
  const int64_t R = X.shape[0], C = X.shape[1];
  if (G.shape[0] != C || B.shape[0] != C || Y.shape[0] != R || Y.shape[1] != C) {
    set_error(args, "layernorm: shapes disagree (X[R,C], gamma[C], beta[C], Y[R,C])");
    return 1;
  }
  if (C == 0) return 0;
  const float eps = static_cast<float>(args->scalars[0]);
  const float* x = data_of<const float>(X);
  const float* g = data_of<const float>(G);
  const float* b = data_of<const float>(B);
  float* y = data_of<float>(Y);
  const float inv_c = 1.0f / static_cast<float>(C);

#pragma omp parallel for schedule(static)
  for (int64_t r = 0; r < R; ++r) {
    const float* xr = x + r * C;
    const float mean = row_sum(xr, C) * inv_c;
    const float var = row_sq_dev(xr, C, mean) * inv_c;
    normalize_row(xr, g, b, y + r * C, C, mean, 1.0f / sqrtf(var + eps));
  }
  return 0;
}
