#include <lathe/abi.h>

extern "C" int lathe_reference(const lathe_args* a) {
  const float* x = static_cast<const float*>(a->inputs[0].data);
  const float* y = static_cast<const float*>(a->inputs[1].data);
  double* z = static_cast<double*>(a->outputs[0].data);
  const int64_t n = a->inputs[0].shape[0];
  for (int64_t i = 0; i < n; ++i) z[i] = a->scalars[0] * static_cast<double>(x[i]) + y[i];
  return 0;
}
