// expect: forbidden
// Grows a pipe's buffer to the system's maximum (F_SETPIPE_SZ): kernel memory that no limit of
// the worker counts, taken 1 MiB a pipe instead of 64 KiB. It got `ok`; F_SETPIPE_SZ now ends the
// worker (seccomp).
#include <lathe/abi.h>
#include <fcntl.h>
#include <unistd.h>
extern "C" int lathe_launch(const lathe_args* a) {
  static int p[2] = {-1, -1};
  if (p[0] < 0 && pipe(p) == 0) fcntl(p[1], F_SETPIPE_SZ, 1 << 20);
  const float* x = static_cast<const float*>(a->inputs[0].data);
  const float* y = static_cast<const float*>(a->inputs[1].data);
  float* z = static_cast<float*>(a->outputs[0].data);
  for (int64_t i = 0; i < a->inputs[0].shape[0]; ++i) z[i] = static_cast<float>(a->scalars[0]) * x[i] + y[i];
  return 0;
}
