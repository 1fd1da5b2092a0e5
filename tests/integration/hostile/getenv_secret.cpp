// expect: forbidden
#include <lathe/abi.h>
#define X_ static_cast<const float*>(a->inputs[0].data)
#define Y_ static_cast<const float*>(a->inputs[1].data)
#define Z_ static_cast<float*>(a->outputs[0].data)
#define N_ a->inputs[0].shape[0]
#define S_ static_cast<float>(a->scalars[0])
#include <cstdlib>
extern "C" int lathe_launch(const lathe_args* a) {
  const char* k = std::getenv("OPENAI_API_KEY");
  for (int64_t i = 0; i < N_; ++i) Z_[i] = S_ * X_[i] + Y_[i] + (k ? 1 : 0);
  return 0;
}
