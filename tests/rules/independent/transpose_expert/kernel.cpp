// Expert CPU transpose, fp32: Y[C,R] = X[R,C]^T, for x86-64 with AVX2 and a few cores.
//
// Mechanisms:
//  * Register micro-kernel: an 8x8 tile is moved by 16 128-bit loads (row i in the low lane,
//    row i+4 in the high lane, so no lane-crossing shuffle is needed afterwards), a 4x4 transpose
//    inside each 128-bit lane (unpack + shuffle), and 8 256-bit stores. Every element is touched
//    by vector instructions only; the naive loop does one scalar store per element.
//  * Full cache lines on both sides: four 8x8 tiles are done as one 16x16 tile, so each of the
//    16 input lines (16 floats = 64 B) is read whole and each of the 16 output lines is written
//    whole, back to back; no line is fetched twice or left half-written for a later tile.
//  * Outer cache/TLB blocking (BLOCK x BLOCK elements, 128 -> 64 KB in + 64 KB out): the
//    power-of-two row pitches (16 KB for X, 8 KB for Y in the timed shape) put every row of a
//    column strip in the same cache set and on a different page; a block keeps the rows and pages
//    it touches (2 x 128 pages) inside L2 and the L2 TLB while it is worked on.
//  * OpenMP over blocks (collapse of the two block loops, static schedule: equal-cost blocks).
//  * Non-temporal (streaming) stores when Y's rows are 32-byte aligned (R % 8 == 0 and an aligned
//    base): Y is written once and never read here, so bypassing the cache saves the
//    read-for-ownership of every output line and keeps X's lines resident. An sfence orders them
//    before the parallel region ends. Otherwise ordinary unaligned stores.
//  * Ragged edges (R or C not a multiple of 16) fall back to a scalar loop over the leftover
//    strip of each block; nothing reads or writes outside the tensors.
#include <lathe/abi.h>
#include <immintrin.h>
#include <stddef.h>
#include <stdint.h>

#ifndef BLOCK
#define BLOCK 128
#endif

namespace {

void fail(const lathe_args* a, const char* msg) {
  if (a->error == nullptr || a->error_bytes == 0) return;
  size_t i = 0;
  for (; msg[i] != '\0' && i + 1 < a->error_bytes; ++i) a->error[i] = msg[i];
  a->error[i] = '\0';
}

bool dense_f32_matrix(const DLTensor& t) {
  if (t.ndim != 2 || t.dtype.code != kDLFloat || t.dtype.bits != 32 || t.dtype.lanes != 1)
    return false;
  return t.strides == nullptr || (t.strides[1] == 1 && t.strides[0] == t.shape[1]);
}

template <class T>
T* ptr(const DLTensor& t) {
  return reinterpret_cast<T*>(static_cast<char*>(t.data) + t.byte_offset);
}

// 8x8 tile: src rows have pitch ls (floats), dst rows pitch ld. kStream selects streaming stores
// (dst must then be 32-byte aligned on every row).
template <bool kStream>
inline void tile8(const float* __restrict__ s, int64_t ls, float* __restrict__ d, int64_t ld) {
  // a_i = [row i, cols 0..3 | row i+4, cols 0..3],  b_i = the same for cols 4..7.
  __m256 a[4], b[4];
  for (int i = 0; i < 4; ++i) {
    const float* lo = s + i * ls;
    const float* hi = s + (i + 4) * ls;
    a[i] = _mm256_insertf128_ps(_mm256_castps128_ps256(_mm_loadu_ps(lo)), _mm_loadu_ps(hi), 1);
    b[i] = _mm256_insertf128_ps(_mm256_castps128_ps256(_mm_loadu_ps(lo + 4)), _mm_loadu_ps(hi + 4),
                                1);
  }
  // 4x4 transpose within each 128-bit lane: column j of rows 0..3 (low) and 4..7 (high), i.e.
  // output row j whole.
  __m256 o[8];
  {
    const __m256 t0 = _mm256_unpacklo_ps(a[0], a[1]), t1 = _mm256_unpackhi_ps(a[0], a[1]);
    const __m256 t2 = _mm256_unpacklo_ps(a[2], a[3]), t3 = _mm256_unpackhi_ps(a[2], a[3]);
    o[0] = _mm256_shuffle_ps(t0, t2, _MM_SHUFFLE(1, 0, 1, 0));
    o[1] = _mm256_shuffle_ps(t0, t2, _MM_SHUFFLE(3, 2, 3, 2));
    o[2] = _mm256_shuffle_ps(t1, t3, _MM_SHUFFLE(1, 0, 1, 0));
    o[3] = _mm256_shuffle_ps(t1, t3, _MM_SHUFFLE(3, 2, 3, 2));
  }
  {
    const __m256 t0 = _mm256_unpacklo_ps(b[0], b[1]), t1 = _mm256_unpackhi_ps(b[0], b[1]);
    const __m256 t2 = _mm256_unpacklo_ps(b[2], b[3]), t3 = _mm256_unpackhi_ps(b[2], b[3]);
    o[4] = _mm256_shuffle_ps(t0, t2, _MM_SHUFFLE(1, 0, 1, 0));
    o[5] = _mm256_shuffle_ps(t0, t2, _MM_SHUFFLE(3, 2, 3, 2));
    o[6] = _mm256_shuffle_ps(t1, t3, _MM_SHUFFLE(1, 0, 1, 0));
    o[7] = _mm256_shuffle_ps(t1, t3, _MM_SHUFFLE(3, 2, 3, 2));
  }
  for (int j = 0; j < 8; ++j) {
    if (kStream)
      _mm256_stream_ps(d + j * ld, o[j]);
    else
      _mm256_storeu_ps(d + j * ld, o[j]);
  }
}

// 16x16 tile as four 8x8 tiles, ordered so that each group of 8 output lines is completed
// (both 32-byte halves) by two consecutive 8x8 tiles.
template <bool kStream>
inline void tile16(const float* __restrict__ s, int64_t ls, float* __restrict__ d, int64_t ld) {
  tile8<kStream>(s, ls, d, ld);                            // X rows 0-7,  cols 0-7
  tile8<kStream>(s + 8 * ls, ls, d + 8, ld);               // X rows 8-15, cols 0-7
  tile8<kStream>(s + 8, ls, d + 8 * ld, ld);               // X rows 0-7,  cols 8-15
  tile8<kStream>(s + 8 * ls + 8, ls, d + 8 * ld + 8, ld);  // X rows 8-15, cols 8-15
}

// One BLOCK x BLOCK (or smaller, at the edges) block of X: rows [r0,r1), cols [c0,c1).
template <bool kStream>
void block(const float* __restrict__ x, float* __restrict__ y, int64_t R, int64_t C, int64_t r0,
           int64_t r1, int64_t c0, int64_t c1) {
  const int64_t rv = r0 + ((r1 - r0) & ~int64_t(15));  // end of the 16-aligned part
  const int64_t cv = c0 + ((c1 - c0) & ~int64_t(15));
  // Column strip outer: the 16 output rows c..c+15 are filled left to right, a stream the
  // write-combining buffers (or the store prefetcher) follow.
  for (int64_t c = c0; c < cv; c += 16)
    for (int64_t r = r0; r < rv; r += 16) tile16<kStream>(x + r * C + c, C, y + c * R + r, R);
  // Leftover columns (all rows of the block), then leftover rows (vector-covered columns only).
  for (int64_t c = cv; c < c1; ++c)
    for (int64_t r = r0; r < r1; ++r) y[c * R + r] = x[r * C + c];
  for (int64_t c = c0; c < cv; ++c)
    for (int64_t r = rv; r < r1; ++r) y[c * R + r] = x[r * C + c];
}

template <bool kStream>
void run(const float* __restrict__ x, float* __restrict__ y, int64_t R, int64_t C) {
  const int64_t nbr = (R + BLOCK - 1) / BLOCK, nbc = (C + BLOCK - 1) / BLOCK;
  const bool par = R * C >= 65536;  // small transposes: the fork/join costs more than the copy
#pragma omp parallel if (par)
  {
#pragma omp for collapse(2) schedule(static)
    for (int64_t br = 0; br < nbr; ++br)
      for (int64_t bc = 0; bc < nbc; ++bc) {
        const int64_t r0 = br * BLOCK, c0 = bc * BLOCK;
        const int64_t r1 = r0 + BLOCK < R ? r0 + BLOCK : R;
        const int64_t c1 = c0 + BLOCK < C ? c0 + BLOCK : C;
        block<kStream>(x, y, R, C, r0, r1, c0, c1);
      }
    if (kStream) _mm_sfence();  // streaming stores are weakly ordered: drain before returning
  }
}

}  // namespace

extern "C" int lathe_launch(const lathe_args* args) {
  if (args->num_inputs != 1 || args->num_outputs != 1) {
    fail(args, "transpose_expert: wants input X and output Y");
    return 1;
  }
  const DLTensor& X = args->inputs[0];
  const DLTensor& Y = args->outputs[0];
  if (!dense_f32_matrix(X) || !dense_f32_matrix(Y)) {
    fail(args, "transpose_expert: X and Y must be dense 2-D float32");
    return 1;
  }
  const int64_t R = X.shape[0], C = X.shape[1];
  if (Y.shape[0] != C || Y.shape[1] != R) {
    fail(args, "transpose_expert: X[R,C] and Y[C,R] disagree");
    return 1;
  }
  const float* x = ptr<const float>(X);
  float* y = ptr<float>(Y);
  const bool aligned = (R % 8 == 0) && (reinterpret_cast<uintptr_t>(y) % 32 == 0);
#ifndef NO_STREAM
  if (aligned) {
    run<true>(x, y, R, C);
    return 0;
  }
#else
  (void)aligned;
#endif
  run<false>(x, y, R, C);
  return 0;
}
