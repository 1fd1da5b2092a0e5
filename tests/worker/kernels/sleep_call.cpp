// Never returns, and never wants a CPU: it sleeps. A loaded machine must not stretch its
// watchdog, which only adds the time the worker's threads waited to run.
#include <lathe/abi.h>
#include <time.h>

extern "C" int lathe_launch(const lathe_args*) {
  for (;;) {
    timespec t{0, 10 * 1000 * 1000};
    nanosleep(&t, nullptr);
  }
}
