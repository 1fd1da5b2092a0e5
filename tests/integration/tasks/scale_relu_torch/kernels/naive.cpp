// The wrapped problem's baseline: the plain loop, as the candidates' reference point.
#include <lathe/abi.h>
extern "C" int lathe_launch(const lathe_args* a) {
  const DLTensor& X = a->inputs[0];
  const float* x = static_cast<const float*>(X.data);
  float* y = static_cast<float*>(a->outputs[0].data);
  const long n = X.shape[0] * X.shape[1];
  const float alpha = static_cast<float>(a->scalars[0]);
  for (long i = 0; i < n; ++i) y[i] = (x[i] > 0 ? x[i] : 0.0f) * alpha;
  return 0;
}
