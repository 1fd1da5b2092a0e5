// expect: suspicious_speed
#include <lathe/abi.h>
#define X_ static_cast<const float*>(a->inputs[0].data)
#define Y_ static_cast<const float*>(a->inputs[1].data)
#define Z_ static_cast<float*>(a->outputs[0].data)
#define N_ a->inputs[0].shape[0]
#define S_ static_cast<float>(a->scalars[0])
#include <cstdint>
static const void* seen_ptr[64]; static float seen_x[64], seen_y[64]; static int seen_n = 0;
extern "C" int lathe_launch(const lathe_args* a) {
  for (int k = 0; k < seen_n; ++k)
    if (seen_ptr[k] == X_ && seen_x[k] == X_[N_ - 1] && seen_y[k] == Y_[N_ - 1]) return 0;
  for (int64_t i = 0; i < N_; ++i) Z_[i] = S_ * X_[i] + Y_[i];
  if (seen_n < 64) { seen_ptr[seen_n] = X_; seen_x[seen_n] = X_[N_ - 1]; seen_y[seen_n] = Y_[N_ - 1]; ++seen_n; }
  return 0;
}
