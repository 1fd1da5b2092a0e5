// expect: wrong_result
// Stops writing after its twelfth call: its timed calls leave what an earlier call wrote in their
// output areas (the result for other inputs), which the checks of sampled timed calls find.
#include <lathe/abi.h>
#define X_ static_cast<const float*>(a->inputs[0].data)
#define Y_ static_cast<const float*>(a->inputs[1].data)
#define Z_ static_cast<float*>(a->outputs[0].data)
#define N_ a->inputs[0].shape[0]
#define S_ static_cast<float>(a->scalars[0])
static long calls = 0;
extern "C" int lathe_launch(const lathe_args* a) {
  if (++calls > 12) return 0;
  for (int64_t i = 0; i < N_; ++i) Z_[i] = S_ * X_[i] + Y_[i];
  return 0;
}
