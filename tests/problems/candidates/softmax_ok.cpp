// expect: ok
// kl_softmax (a KLineage definition): row softmax, max subtracted.
#include <lathe/abi.h>
#include <math.h>
extern "C" int lathe_launch(const lathe_args* a) {
  const DLTensor& X = a->inputs[0];
  const float* x = static_cast<const float*>(X.data);
  float* y = static_cast<float*>(a->outputs[0].data);
  const long R = X.shape[0], C = X.shape[1];
  for (long r = 0; r < R; ++r) {
    float m = x[r * C];
    for (long c = 1; c < C; ++c) m = fmaxf(m, x[r * C + c]);
    double s = 0;
    for (long c = 0; c < C; ++c) s += expf(x[r * C + c] - m);
    for (long c = 0; c < C; ++c) y[r * C + c] = static_cast<float>(expf(x[r * C + c] - m) / s);
  }
  return 0;
}
