// expect: wrong_result
// kb_scale_relu without the initialization argument: relu(x), not relu(x) * alpha.
#include <lathe/abi.h>
extern "C" int lathe_launch(const lathe_args* a) {
  const DLTensor& X = a->inputs[0];
  const float* x = static_cast<const float*>(X.data);
  float* y = static_cast<float*>(a->outputs[0].data);
  const long n = X.shape[0] * X.shape[1];
  for (long i = 0; i < n; ++i) y[i] = x[i] > 0 ? x[i] : 0.0f;
  return 0;
}
