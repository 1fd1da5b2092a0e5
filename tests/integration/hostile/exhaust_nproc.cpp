// expect: ok
// Takes every thread its user may have: threads with small stacks, started until the kernel
// refuses another, then parked. Every worker ran as `nobody`, so the process limit was one budget
// shared by all of them: its own baseline could not start its thread pool ("a task problem") and
// an OpenMP kernel evaluated at the same time elsewhere crashed. Each worker now runs as a user of
// its own (hostile_test runs the neighbour).
#include <lathe/abi.h>
#include <pthread.h>
#include <unistd.h>
namespace {
void* park(void*) {
  for (;;) pause();
  return nullptr;
}
}  // namespace
extern "C" int lathe_init(void) {
  pthread_attr_t attr;
  pthread_attr_init(&attr);
  pthread_attr_setstacksize(&attr, 64 << 10);
  for (int i = 0; i < 100000; ++i) {
    pthread_t t;
    if (pthread_create(&t, &attr, park, nullptr) != 0) break;
  }
  usleep(500000);  // holds them a while: the neighbour is evaluated meanwhile
  return 0;
}
extern "C" int lathe_launch(const lathe_args* a) {
  const float* x = static_cast<const float*>(a->inputs[0].data);
  const float* y = static_cast<const float*>(a->inputs[1].data);
  float* z = static_cast<float*>(a->outputs[0].data);
  for (int64_t i = 0; i < a->inputs[0].shape[0]; ++i) z[i] = static_cast<float>(a->scalars[0]) * x[i] + y[i];
  return 0;
}
