// expect: wrong_result
#include <lathe/abi.h>
#define X_ static_cast<const float*>(a->inputs[0].data)
#define Y_ static_cast<const float*>(a->inputs[1].data)
#define Z_ static_cast<float*>(a->outputs[0].data)
#define N_ a->inputs[0].shape[0]
#define S_ static_cast<float>(a->scalars[0])
extern "C" int lathe_launch(const lathe_args* a) {
  for (int64_t i = 0; i < 1000 && i < N_; ++i) Z_[i] = S_ * X_[i] + Y_[i];
  for (int64_t i = 1000; i < N_; ++i) Z_[i] = 0;
  return 0;
}
