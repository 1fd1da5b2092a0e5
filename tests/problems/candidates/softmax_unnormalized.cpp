// expect: wrong_result
// kl_softmax without the division by the row sum.
#include <lathe/abi.h>
#include <math.h>
extern "C" int lathe_launch(const lathe_args* a) {
  const DLTensor& X = a->inputs[0];
  const float* x = static_cast<const float*>(X.data);
  float* y = static_cast<float*>(a->outputs[0].data);
  const long n = X.shape[0] * X.shape[1];
  for (long i = 0; i < n; ++i) y[i] = expf(x[i]);
  return 0;
}
