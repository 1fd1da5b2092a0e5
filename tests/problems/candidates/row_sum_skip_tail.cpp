// expect: wrong_result
// kl_row_sum without the last 64 columns: wrong by far more than the scaled tolerance.
#include <lathe/abi.h>
extern "C" int lathe_launch(const lathe_args* a) {
  const DLTensor& X = a->inputs[0];
  const float* x = static_cast<const float*>(X.data);
  float* y = static_cast<float*>(a->outputs[0].data);
  const long R = X.shape[0], C = X.shape[1];
  for (long r = 0; r < R; ++r) {
    float s = 0;
    for (long c = 0; c < C - 64; ++c) s += x[r * C + c];
    y[r] = s;
  }
  return 0;
}
