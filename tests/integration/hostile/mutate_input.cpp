// expect: input_mutated
#include <lathe/abi.h>
#define X_ static_cast<const float*>(a->inputs[0].data)
#define Y_ static_cast<const float*>(a->inputs[1].data)
#define Z_ static_cast<float*>(a->outputs[0].data)
#define N_ a->inputs[0].shape[0]
#define S_ static_cast<float>(a->scalars[0])
extern "C" int lathe_launch(const lathe_args* a) {
  float* x = const_cast<float*>(X_);
  for (int64_t i = 0; i < N_; ++i) { Z_[i] = S_ * x[i] + Y_[i]; x[i] = 0; }
  return 0;
}
