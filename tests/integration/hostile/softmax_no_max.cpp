// expect: nan_or_inf|wrong_result
// task: softmax
// The textbook softmax without the max subtraction: exp(x) overflows for rows shifted by +100,
// the perturbation the softmax task declares to catch exactly this. With three seeds per shape
// set only the first three of its five perturbation options ran (unperturbed, scale 0.1, scale
// 4), so it got `ok`. Every declared perturbation now runs in every evaluation.
#include <lathe/abi.h>
#include <cmath>
extern "C" int lathe_launch(const lathe_args* a) {
  const float* x = static_cast<const float*>(a->inputs[0].data);
  float* y = static_cast<float*>(a->outputs[0].data);
  const int64_t rows = a->inputs[0].shape[0], cols = a->inputs[0].shape[1];
  for (int64_t r = 0; r < rows; ++r) {
    float sum = 0;
    for (int64_t c = 0; c < cols; ++c) sum += std::exp(x[r * cols + c]);
    for (int64_t c = 0; c < cols; ++c) y[r * cols + c] = std::exp(x[r * cols + c]) / sum;
  }
  return 0;
}
