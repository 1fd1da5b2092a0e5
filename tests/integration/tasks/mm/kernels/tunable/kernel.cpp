// A tunable GEMM for `lathe tune`'s tests (docs/tune.md): ORDER picks the loop order (0: i-j-k,
// a column of B per element, strided; 1: i-k-j, rows of B, vectorized), TILE blocks k. The
// default (ORDER = 0) is the slow one, so a search has something to find.
#include <lathe/abi.h>

#ifndef ORDER
#define ORDER 0
#endif
#ifndef TILE
#define TILE 16
#endif

extern "C" int lathe_launch(const lathe_args* a) {
  const float* x = static_cast<const float*>(a->inputs[0].data);
  const float* y = static_cast<const float*>(a->inputs[1].data);
  float* z = static_cast<float*>(a->outputs[0].data);
  const int64_t n = a->inputs[0].shape[0];
  for (int64_t i = 0; i < n * n; ++i) z[i] = 0;
  for (int64_t k0 = 0; k0 < n; k0 += TILE) {
    const int64_t k1 = k0 + TILE < n ? k0 + TILE : n;
#if ORDER == 0
    for (int64_t i = 0; i < n; ++i)
      for (int64_t j = 0; j < n; ++j) {
        float s = 0;
        for (int64_t k = k0; k < k1; ++k) s += x[i * n + k] * y[k * n + j];
        z[i * n + j] += s;
      }
#else
    for (int64_t i = 0; i < n; ++i)
      for (int64_t k = k0; k < k1; ++k) {
        const float v = x[i * n + k];
        for (int64_t j = 0; j < n; ++j) z[i * n + j] += v * y[k * n + j];
      }
#endif
  }
  return 0;
}
