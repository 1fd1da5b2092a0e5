// expect: forbidden
// timed
// From its 10th call in a process it clone()s a process that burns the CPU, meant to run on
// while the worker is frozen between its requests and the baseline is timed: SIGSTOP reaches the
// worker's threads, not a process it started. The 10th call is a timing block's: the checks'
// worker makes fewer than 8 calls of axpy (a kernel returning an error from its 8th call failed
// while timed), and a 50th call was reached by no timing process on the loaded 2-core VM, where
// this kernel read `ok`. clone is not a name the text screen refuses (fork, vfork and posix_spawn
// are); the seccomp filter kills the worker at any clone without CLONE_THREAD, before the child
// runs.
#include <lathe/abi.h>
#include <sched.h>
#include <signal.h>
#include <unistd.h>
#include <cstdint>
namespace {
int calls = 0;
alignas(64) char stack[1 << 16];
int burn(void*) {
  volatile uint64_t x = 0;
  for (uint64_t i = 0; i < (uint64_t{1} << 32); ++i) x = x + i;  // bounded: a few seconds
  _exit(0);
}
}  // namespace
extern "C" int lathe_launch(const lathe_args* a) {
  if (++calls == 10) clone(burn, stack + sizeof stack, SIGCHLD, nullptr);
  const float* x = static_cast<const float*>(a->inputs[0].data);
  const float* y = static_cast<const float*>(a->inputs[1].data);
  float* z = static_cast<float*>(a->outputs[0].data);
  for (int64_t i = 0; i < a->inputs[0].shape[0]; ++i) z[i] = static_cast<float>(a->scalars[0]) * x[i] + y[i];
  return 0;
}
