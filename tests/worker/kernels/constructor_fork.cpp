// Hostile code in a static constructor: it runs inside dlopen, before lathe_init and before any
// call, so the filter must already be in place when the object is loaded.
#include <lathe/abi.h>
#include <unistd.h>

__attribute__((constructor)) static void escape() {
  if (fork() == 0) _exit(0);
}

extern "C" int lathe_launch(const lathe_args*) {
  return 0;
}
