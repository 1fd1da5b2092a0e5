// expect: timeout
// Sleeps in its first call and never returns. Alone this is a timeout; hostile_test's kill test
// also kills lathe with SIGKILL while the worker sleeps: the worker used to live on, reparented
// to init, holding its memory. A worker now dies with the lathe thread that started it
// (PR_SET_PDEATHSIG), and may not change that.
#include <lathe/abi.h>
#include <unistd.h>
extern "C" int lathe_launch(const lathe_args*) {
  for (;;) sleep(1);
}
