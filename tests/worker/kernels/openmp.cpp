// An honest OpenMP kernel: its pool must sleep between calls (OMP_WAIT_POLICY=PASSIVE).
#include <lathe/abi.h>

#include <cstdint>

extern "C" int lathe_launch(const lathe_args* a) {
  const float* in = static_cast<const float*>(a->inputs[0].data);
  float* out = static_cast<float*>(a->outputs[0].data);
  const int64_t n = a->inputs[0].shape[0];
#pragma omp parallel for
  for (int64_t i = 0; i < n; ++i) out[i] = 2 * in[i];
  return 0;
}
