// Starts a process that burns the CPU while the worker is frozen and other workers are timed, by
// the way scalars[0] names: 0 fork(), 1 clone() of a process that shares the worker's memory
// (no CLONE_THREAD: not in the worker's thread group, so a SIGSTOP to the worker would not stop
// it), 2 clone3() of a process. The child counts in outputs[0] (the shared region, so lathe sees
// it) and ends by itself after about 1.5 s. Returns errno when the call failed.
#include <lathe/abi.h>
#include <linux/sched.h>
#include <sched.h>
#include <signal.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>

namespace {

volatile uint64_t* counter;
alignas(64) char stack[1 << 16];

[[noreturn]] void burn() {
  timespec t0{}, t{};
  clock_gettime(CLOCK_MONOTONIC, &t0);
  for (uint64_t i = 1;; ++i) {
    ++*counter;
    if (i % (1u << 20) == 0) {
      clock_gettime(CLOCK_MONOTONIC, &t);
      if (t.tv_sec - t0.tv_sec >= 2) _exit(0);
    }
  }
}

int child(void*) { burn(); }

}  // namespace

extern "C" int lathe_launch(const lathe_args* a) {
  counter = static_cast<volatile uint64_t*>(a->outputs[0].data);
  *counter = 0;
  long rc = 0;
  switch (static_cast<int>(a->scalars[0])) {
    case 0:
      rc = fork();
      if (rc == 0) burn();
      break;
    case 1:
      rc = clone(child, stack + sizeof stack, CLONE_VM | CLONE_SIGHAND | SIGCHLD, nullptr);
      break;
    case 2: {
      clone_args args{};
      args.exit_signal = SIGCHLD;
      rc = syscall(SYS_clone3, &args, sizeof args);
      if (rc == 0) burn();
      break;
    }
  }
  return rc < 0 ? errno : 0;
}
