// expect: forbidden
// Starts a session of its own (setsid), the first step of a process that means to outlive lathe
// (it then sleeps: see hostile_test's kill test). It was allowed and got `ok`; setsid and
// setpgid now end the worker (seccomp).
#include <lathe/abi.h>
#include <unistd.h>
extern "C" int lathe_launch(const lathe_args* a) {
  setsid();
  const float* x = static_cast<const float*>(a->inputs[0].data);
  const float* y = static_cast<const float*>(a->inputs[1].data);
  float* z = static_cast<float*>(a->outputs[0].data);
  for (int64_t i = 0; i < a->inputs[0].shape[0]; ++i) z[i] = static_cast<float>(a->scalars[0]) * x[i] + y[i];
  return 0;
}
