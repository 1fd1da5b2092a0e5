// expect: ok
// kl_rmsnorm: y = x * rsqrt(mean(x^2) + 1e-6) * weight, per row; accumulated in double.
#include <lathe/abi.h>
#include <math.h>
extern "C" int lathe_launch(const lathe_args* a) {
  const DLTensor& X = a->inputs[0];
  const float* x = static_cast<const float*>(X.data);
  const float* w = static_cast<const float*>(a->inputs[1].data);
  float* y = static_cast<float*>(a->outputs[0].data);
  const long R = X.shape[0], C = X.shape[1];
  for (long r = 0; r < R; ++r) {
    double ss = 0;
    for (long c = 0; c < C; ++c) ss += static_cast<double>(x[r * C + c]) * x[r * C + c];
    const float inv = static_cast<float>(1.0 / sqrt(ss / C + 1e-6));
    for (long c = 0; c < C; ++c) y[r * C + c] = x[r * C + c] * inv * w[c];
  }
  return 0;
}
