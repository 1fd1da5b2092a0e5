// SiLU for bench/tune (issue 45), fp32, one thread: the exponentials of a chunk of CHUNK elements
// first (a loop the compiler can unroll UNROLL times), then the products; FORM 0 computes
// x / (1 + exp(-x)), FORM 1 x * e / (1 + e) with e = exp(x) clamped where it overflows.
#include <lathe/abi.h>
#include <math.h>
#include <stdint.h>

#ifndef CHUNK
#define CHUNK 1
#endif
#ifndef UNROLL
#define UNROLL 1
#endif
#ifndef FORM
#define FORM 0
#endif

#define LATHE_STR2(x) #x
#define LATHE_STR(x) LATHE_STR2(x)

extern "C" int lathe_launch(const lathe_args* args) {
  const DLTensor& X = args->inputs[0];
  const int64_t n = X.shape[0] * X.shape[1];
  const float* x = static_cast<const float*>(X.data);
  float* y = static_cast<float*>(args->outputs[0].data);
  float e[CHUNK];
  for (int64_t i0 = 0; i0 < n; i0 += CHUNK) {
    const int64_t m = n - i0 < CHUNK ? n - i0 : CHUNK;
    _Pragma(LATHE_STR(GCC unroll UNROLL))
    for (int64_t i = 0; i < m; ++i) e[i] = expf(FORM == 0 ? -x[i0 + i] : fminf(x[i0 + i], 80.0f));
    for (int64_t i = 0; i < m; ++i)
      y[i0 + i] = FORM == 0 ? x[i0 + i] / (1.0f + e[i]) : x[i0 + i] * e[i] / (1.0f + e[i]);
  }
  return 0;
}
