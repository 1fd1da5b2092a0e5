// An honest kernel whose call costs 0.2 s of its thread's CPU time, however long that takes on
// the clock: a loaded machine stretches its wall time, never its work.
#include <lathe/abi.h>
#include <time.h>

#include <cstdint>

extern "C" int lathe_launch(const lathe_args* a) {
  timespec t{};
  volatile unsigned long spin = 0;
  do {
    for (int i = 0; i < 10000; ++i) spin = spin + 1;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
  } while (t.tv_sec * 1e9 + t.tv_nsec < 0.2e9);
  const float* in = static_cast<const float*>(a->inputs[0].data);
  float* out = static_cast<float*>(a->outputs[0].data);
  for (int64_t i = 0; i < a->inputs[0].shape[0]; ++i) out[i] = 2 * in[i];
  return 0;
}
