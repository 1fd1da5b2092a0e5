// expect: wrong_result
// Computes only while its output still holds the poison, so every check passes, but timed calls
// into an output area written before do nothing: the area keeps the result of another call's
// inputs, which the checks of sampled timed calls find (the roofline caught it before, only
// because doing nothing at all is 100x below the floor).
#include <lathe/abi.h>
#include <cmath>
extern "C" int lathe_launch(const lathe_args* a) {
  const float* x = static_cast<const float*>(a->inputs[0].data);
  const float* y = static_cast<const float*>(a->inputs[1].data);
  float* z = static_cast<float*>(a->outputs[0].data);
  const int64_t n = a->inputs[0].shape[0];
  if (!std::isnan(z[0]) && !std::isnan(z[n - 1])) return 0;
  for (int64_t i = 0; i < n; ++i) z[i] = static_cast<float>(a->scalars[0]) * x[i] + y[i];
  return 0;
}
