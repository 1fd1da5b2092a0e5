// A row mean for bench/tune (issue 45), fp32: ACC independent partial sums per row (breaking the
// chain of dependent adds the naive kernel has), ROWS rows interleaved per pass. One thread.
#include <lathe/abi.h>
#include <stdint.h>

#ifndef ACC
#define ACC 1
#endif
#ifndef ROWS
#define ROWS 1
#endif

extern "C" int lathe_launch(const lathe_args* args) {
  const DLTensor& X = args->inputs[0];
  const int64_t R = X.shape[0], C = X.shape[1];
  const float* x = static_cast<const float*>(X.data);
  float* y = static_cast<float*>(args->outputs[0].data);
  for (int64_t r0 = 0; r0 < R; r0 += ROWS) {
    const int64_t rows = R - r0 < ROWS ? R - r0 : ROWS;
    float s[ROWS][ACC] = {};
    int64_t c = 0;
    for (; c + ACC <= C; c += ACC)
      for (int64_t r = 0; r < rows; ++r)
        for (int a = 0; a < ACC; ++a) s[r][a] += x[(r0 + r) * C + c + a];
    for (int64_t r = 0; r < rows; ++r) {
      float t = 0.0f;
      for (int a = 0; a < ACC; ++a) t += s[r][a];
      for (int64_t k = c; k < C; ++k) t += x[(r0 + r) * C + k];
      y[r0 + r] = t / float(C);
    }
  }
  return 0;
}
