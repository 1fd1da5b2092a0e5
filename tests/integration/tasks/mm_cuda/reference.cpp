#include <lathe/abi.h>

extern "C" int lathe_reference(const lathe_args* a) {
  const float* x = static_cast<const float*>(a->inputs[0].data);
  const float* y = static_cast<const float*>(a->inputs[1].data);
  double* z = static_cast<double*>(a->outputs[0].data);
  const int64_t n = a->inputs[0].shape[0];
  for (int64_t i = 0; i < n * n; ++i) z[i] = 0;
  for (int64_t i = 0; i < n; ++i)
    for (int64_t k = 0; k < n; ++k) {
      const double v = x[i * n + k];
      for (int64_t j = 0; j < n; ++j) z[i * n + j] += v * y[k * n + j];
    }
  return 0;
}
