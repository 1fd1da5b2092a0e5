#include <lathe/abi.h>

extern "C" int lathe_launch(const lathe_args* a) {
  const float* x = static_cast<const float*>(a->inputs[0].data);
  const float* y = static_cast<const float*>(a->inputs[1].data);
  float* z = static_cast<float*>(a->outputs[0].data);
  const float s = static_cast<float>(a->scalars[0]);
  const int64_t n = a->inputs[0].shape[0];
#pragma omp parallel for
  for (int64_t i = 0; i < n; ++i) z[i] = s * x[i] + y[i];
  return 0;
}
