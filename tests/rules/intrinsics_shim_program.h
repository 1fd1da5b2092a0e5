// The program tests/rules/intrinsics_test.cpp compiles with g++ and runs on this host: every
// entry of lathe's scalar stand-in (agent/rules/catalog_intrinsics.h) against the real
// instruction, on values chosen to hit the edges (NaN, infinities, signed zeros, halfway cases,
// out-of-range conversions) and random ones, compared bit for bit. It includes <immintrin.h> and
// the stand-in side by side, which the `lathe` prefix of every stand-in name allows. Prints one
// line per mismatch and "checked N" at the end; exits 1 on any mismatch.
#pragma once

inline const char* const kShimCheckProgram = R"PROGRAM(
#include <immintrin.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lathe_scalar_m256.inc"

static int bad = 0, checked = 0;
template <class A, class B>
static void same(const char* what, int k, const A& a, const B& b) {
  static_assert(sizeof(A) == sizeof(B), "sizes");
  ++checked;
  if (memcmp(&a, &b, sizeof a) != 0 && bad++ < 20) printf("mismatch: %s (case %d)\n", what, k);
}
template <class T, class U> static T as(const U& u) {
  static_assert(sizeof(T) == sizeof(U), "sizes");
  T t;
  memcpy(&t, &u, sizeof t);
  return t;
}
#define L256(x) as<lathe_m256>(x)
#define L256I(x) as<lathe_m256i>(x)
#define L128(x) as<lathe_m128>(x)

// Edge values first, then random ones; one NaN bit pattern only (x86 picks between two NaN
// operands by position, which a commuted scalar add may not keep).
static float pool[64];
static void fill() {
  const float edge[] = {0.0f, -0.0f, 1.0f, -1.0f, 0.5f, 1.5f, 2.5f, -2.5f, 3.5f, -0.5f,
                        __builtin_nanf(""), __builtin_inff(), -__builtin_inff(), 1e-40f,
                        3e9f, -3e9f, 2147483520.0f, -2147483648.0f, 8388608.5f, 1e30f};
  const int ne = sizeof edge / sizeof edge[0];
  srand(7);
  for (int i = 0; i < 64; ++i)
    pool[i] = i < ne ? edge[i] : (float)(rand() % 20000 - 10000) / (float)(1 + rand() % 97);
}
static __m256 vec(int k) { return _mm256_loadu_ps(pool + (k * 3) % 56); }
static __m256i ivec(int k) {
  int v[8];
  for (int i = 0; i < 8; ++i) v[i] = (int)((unsigned)rand() * 2654435761u) >> (k % 3 * 8);
  return _mm256_loadu_si256((const __m256i*)v);
}

template <int P> static void cmp_all(__m256 a, __m256 b, int k) {
  same("_mm256_cmp_ps", k * 32 + P, _mm256_cmp_ps(a, b, P), lathe_mm256_cmp_ps(L256(a), L256(b), P));
  if constexpr (P < 31) cmp_all<P + 1>(a, b, k);
}
template <int I> static void imm_all(__m256 a, __m256 b, __m128 c, __m128 d, __m256i n, int k) {
  same("_mm256_shuffle_ps", I, _mm256_shuffle_ps(a, b, I), lathe_mm256_shuffle_ps(L256(a), L256(b), I));
  same("_mm_shuffle_ps", I, _mm_shuffle_ps(c, d, I), lathe_mm_shuffle_ps(L128(c), L128(d), I));
  same("_mm256_permute_ps", I, _mm256_permute_ps(a, I), lathe_mm256_permute_ps(L256(a), I));
  same("_mm256_permute2f128_ps", I, _mm256_permute2f128_ps(a, b, I),
       lathe_mm256_permute2f128_ps(L256(a), L256(b), I));
  if constexpr (I < 40) {
    same("_mm256_slli_epi32", I, _mm256_slli_epi32(n, I), lathe_mm256_slli_epi32(L256I(n), I));
    same("_mm256_srli_epi32", I, _mm256_srli_epi32(n, I), lathe_mm256_srli_epi32(L256I(n), I));
    same("_mm256_srai_epi32", I, _mm256_srai_epi32(n, I), lathe_mm256_srai_epi32(L256I(n), I));
  }
  if constexpr (I < 255) imm_all<I + 1>(a, b, c, d, n, k);
}
template <int M> static void round_one(__m256 a, int k) {
  same("_mm256_round_ps", k * 16 + M, _mm256_round_ps(a, M), lathe_mm256_round_ps(L256(a), M));
}

int main() {
  fill();
  for (int k = 0; k < 40; ++k) {
    const __m256 a = vec(k), b = vec(k + 7), c = vec(k + 13);
    const __m128 a4 = _mm256_castps256_ps128(a), b4 = _mm256_extractf128_ps(b, 1);
    const __m256i n = ivec(k), m = ivec(k + 1);
    const lathe_m256 la = L256(a), lb = L256(b), lc = L256(c);
    const lathe_m128 la4 = L128(a4), lb4 = L128(b4);
#define BIN(name) same(#name, k, name(a, b), lathe##name(la, lb))
#define BIN4(name) same(#name, k, name(a4, b4), lathe##name(la4, lb4))
#define BINI(name) same(#name, k, name(n, m), lathe##name(L256I(n), L256I(m)))
#define UN(name) same(#name, k, name(a), lathe##name(la))
    BIN(_mm256_add_ps); BIN(_mm256_sub_ps); BIN(_mm256_mul_ps); BIN(_mm256_div_ps);
    BIN(_mm256_max_ps); BIN(_mm256_min_ps); BIN(_mm256_hadd_ps); BIN(_mm256_and_ps);
    BIN(_mm256_andnot_ps); BIN(_mm256_or_ps); BIN(_mm256_xor_ps); BIN(_mm256_unpacklo_ps);
    BIN(_mm256_unpackhi_ps);
    BIN4(_mm_add_ps); BIN4(_mm_sub_ps); BIN4(_mm_mul_ps); BIN4(_mm_div_ps); BIN4(_mm_max_ps);
    BIN4(_mm_min_ps); BIN4(_mm_add_ss); BIN4(_mm_sub_ss); BIN4(_mm_mul_ss); BIN4(_mm_div_ss);
    BIN4(_mm_max_ss); BIN4(_mm_min_ss); BIN4(_mm_movehl_ps); BIN4(_mm_movelh_ps);
    BIN4(_mm_hadd_ps); BIN4(_mm_unpacklo_ps); BIN4(_mm_unpackhi_ps);
    BINI(_mm256_add_epi32); BINI(_mm256_sub_epi32); BINI(_mm256_mullo_epi32);
    BINI(_mm256_and_si256); BINI(_mm256_andnot_si256); BINI(_mm256_or_si256);
    BINI(_mm256_xor_si256); BINI(_mm256_cmpgt_epi32); BINI(_mm256_cmpeq_epi32);
    BINI(_mm256_max_epi32); BINI(_mm256_min_epi32);
    UN(_mm256_sqrt_ps); UN(_mm256_floor_ps); UN(_mm256_ceil_ps); UN(_mm256_cvtps_epi32);
    UN(_mm256_cvttps_epi32); UN(_mm256_castps_si256); UN(_mm256_movemask_ps);
    UN(_mm256_cvtss_f32); UN(_mm256_castps256_ps128);
    same("_mm_movehdup_ps", k, _mm_movehdup_ps(a4), lathe_mm_movehdup_ps(la4));
    same("_mm_moveldup_ps", k, _mm_moveldup_ps(a4), lathe_mm_moveldup_ps(la4));
    same("_mm_cvtss_f32", k, _mm_cvtss_f32(a4), lathe_mm_cvtss_f32(la4));
    same("_mm256_cvtepi32_ps", k, _mm256_cvtepi32_ps(n), lathe_mm256_cvtepi32_ps(L256I(n)));
    same("_mm256_castsi256_ps", k, _mm256_castsi256_ps(n), lathe_mm256_castsi256_ps(L256I(n)));
    same("_mm256_cvtsi256_si32", k, _mm256_cvtsi256_si32(n), lathe_mm256_cvtsi256_si32(L256I(n)));
    same("_mm256_fmadd_ps", k, _mm256_fmadd_ps(a, b, c), lathe_mm256_fmadd_ps(la, lb, lc));
    same("_mm256_fmsub_ps", k, _mm256_fmsub_ps(a, b, c), lathe_mm256_fmsub_ps(la, lb, lc));
    same("_mm256_fnmadd_ps", k, _mm256_fnmadd_ps(a, b, c), lathe_mm256_fnmadd_ps(la, lb, lc));
    same("_mm256_fnmsub_ps", k, _mm256_fnmsub_ps(a, b, c), lathe_mm256_fnmsub_ps(la, lb, lc));
    same("_mm256_blendv_ps", k, _mm256_blendv_ps(a, b, c), lathe_mm256_blendv_ps(la, lb, lc));
    same("_mm256_permutevar8x32_ps", k, _mm256_permutevar8x32_ps(a, n),
         lathe_mm256_permutevar8x32_ps(la, L256I(n)));
    same("_mm256_extractf128_ps", k, _mm256_extractf128_ps(a, 1), lathe_mm256_extractf128_ps(la, 1));
    same("_mm256_extractf128_ps", k, _mm256_extractf128_ps(a, 0), lathe_mm256_extractf128_ps(la, 0));
    same("_mm256_insertf128_ps", k, _mm256_insertf128_ps(a, b4, 1),
         lathe_mm256_insertf128_ps(la, lb4, 1));
    same("_mm256_insertf128_ps", k, _mm256_insertf128_ps(a, b4, 0),
         lathe_mm256_insertf128_ps(la, lb4, 0));
    same("_mm256_castps128_ps256+insert", k, _mm256_insertf128_ps(_mm256_castps128_ps256(a4), b4, 1),
         lathe_mm256_insertf128_ps(lathe_mm256_castps128_ps256(la4), lb4, 1));
    cmp_all<0>(a, b, k);
    round_one<0>(a, k); round_one<1>(a, k); round_one<2>(a, k); round_one<3>(a, k);
    round_one<4>(a, k); round_one<8>(a, k); round_one<9>(a, k); round_one<10>(a, k);
    round_one<11>(a, k); round_one<12>(a, k);
    if (k < 3) imm_all<0>(a, b, a4, b4, n, k);
    // Sets, loads and stores (masked ones with a mask of mixed signs).
    const float* p = pool + k % 48;
    alignas(32) float q[16];
    memcpy(q, p, sizeof q);
    same("_mm256_set1_ps", k, _mm256_set1_ps(p[0]), lathe_mm256_set1_ps(p[0]));
    same("_mm256_set_ps", k, _mm256_set_ps(p[0], p[1], p[2], p[3], p[4], p[5], p[6], p[7]),
         lathe_mm256_set_ps(p[0], p[1], p[2], p[3], p[4], p[5], p[6], p[7]));
    same("_mm256_setr_ps", k, _mm256_setr_ps(p[0], p[1], p[2], p[3], p[4], p[5], p[6], p[7]),
         lathe_mm256_setr_ps(p[0], p[1], p[2], p[3], p[4], p[5], p[6], p[7]));
    same("_mm256_set_epi32", k, _mm256_set_epi32(k, 1, -2, 3, -4, 5, 6, 7),
         lathe_mm256_set_epi32(k, 1, -2, 3, -4, 5, 6, 7));
    same("_mm256_setr_epi32", k, _mm256_setr_epi32(k, 1, -2, 3, -4, 5, 6, 7),
         lathe_mm256_setr_epi32(k, 1, -2, 3, -4, 5, 6, 7));
    same("_mm256_set1_epi32", k, _mm256_set1_epi32(-k), lathe_mm256_set1_epi32(-k));
    same("_mm256_setzero_ps", k, _mm256_setzero_ps(), lathe_mm256_setzero_ps());
    same("_mm256_setzero_si256", k, _mm256_setzero_si256(), lathe_mm256_setzero_si256());
    same("_mm_setzero_ps", k, _mm_setzero_ps(), lathe_mm_setzero_ps());
    same("_mm_set1_ps", k, _mm_set1_ps(p[1]), lathe_mm_set1_ps(p[1]));
    same("_mm256_loadu_ps", k, _mm256_loadu_ps(p), lathe_mm256_loadu_ps(p));
    same("_mm256_load_ps", k, _mm256_load_ps(q), lathe_mm256_load_ps(q));
    same("_mm_loadu_ps", k, _mm_loadu_ps(p), lathe_mm_loadu_ps(p));
    same("_mm_load_ps", k, _mm_load_ps(q), lathe_mm_load_ps(q));
    same("_mm256_broadcast_ss", k, _mm256_broadcast_ss(p), lathe_mm256_broadcast_ss(p));
    same("_mm256_maskload_ps", k, _mm256_maskload_ps(p, n), lathe_mm256_maskload_ps(p, L256I(n)));
    same("_mm256_loadu_si256", k, _mm256_loadu_si256((const __m256i*)p),
         lathe_mm256_loadu_si256((const lathe_m256i*)p));
    alignas(32) float x[8], y[8];
    alignas(32) int xi[8], yi[8];
#define STORE(name, T, LT, v, lv) \
    memcpy(x, q, 32); memcpy(y, q, 32); name((T*)x, v); lathe##name((LT*)y, lv); same(#name, k, x, y)
    STORE(_mm256_storeu_ps, float, float, a, la);
    STORE(_mm256_store_ps, float, float, a, la);
    STORE(_mm256_stream_ps, float, float, a, la);
    STORE(_mm_storeu_ps, float, float, a4, la4);
    STORE(_mm_store_ps, float, float, a4, la4);
    STORE(_mm256_storeu_si256, __m256i, lathe_m256i, n, L256I(n));
    STORE(_mm256_store_si256, __m256i, lathe_m256i, n, L256I(n));
    memcpy(xi, q, 32); memcpy(yi, q, 32);
    _mm256_maskstore_ps((float*)xi, m, a);
    lathe_mm256_maskstore_ps((float*)yi, L256I(m), la);
    same("_mm256_maskstore_ps", k, xi, yi);
  }
  _mm_sfence();
  lathe_mm_sfence();
  _mm_prefetch((const char*)pool, _MM_HINT_T0);
  lathe_mm_prefetch(pool, LATHE_MM_HINT_T0);
  same("_MM_SHUFFLE", 0, _MM_SHUFFLE(3, 1, 2, 0), LATHE_MM_SHUFFLE(3, 1, 2, 0));
  same("_CMP_GE_OQ", 0, _CMP_GE_OQ, LATHE_CMP_GE_OQ);
  same("_MM_FROUND_NEARBYINT", 0, _MM_FROUND_NEARBYINT, LATHE_MM_FROUND_NEARBYINT);
  same("_MM_HINT_NTA", 0, (int)_MM_HINT_NTA, LATHE_MM_HINT_NTA);
  printf("checked %d\n", checked);
  return bad ? 1 : 0;
}
)PROGRAM";
