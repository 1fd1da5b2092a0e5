// Tries one way out of the sandbox, chosen by scalars[0]; returns errno if the call failed.
#include <fcntl.h>
#include <lathe/abi.h>
#include <sched.h>
#include <signal.h>
#include <sys/ptrace.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>

extern "C" int lathe_launch(const lathe_args* a) {
  const int mode = static_cast<int>(a->scalars[0]);
  long rc = 0;
  char path[64];
  rlimit r{};
  switch (mode) {
    case 0:
      rc = fork();
      if (rc == 0) _exit(0);
      break;
    case 1:
      rc = execl("/bin/true", "true", static_cast<char*>(nullptr));
      break;
    case 2:
      rc = socket(AF_INET, SOCK_STREAM, 0);
      break;
    case 3:
      rc = kill(getppid(), SIGTERM);
      break;
    case 4:
      r.rlim_cur = r.rlim_max = RLIM_INFINITY;
      rc = setrlimit(RLIMIT_CPU, &r);
      break;
    case 5:
      rc = ftruncate(3, 0);
      break;  // shrink lathe's shared region under it
    case 6:
      rc = unlink("/tmp/lathe-worker-test-victim");
      break;
    case 7:
      rc = ptrace(PTRACE_ATTACH, getppid(), nullptr, nullptr);
      break;
    case 8:
      std::snprintf(path, sizeof path, "/proc/%d/mem", static_cast<int>(getppid()));
      rc = open(path, O_RDWR);
      break;
    case 9:  // reading a limit is allowed
      rc = getrlimit(RLIMIT_CPU, &r);
      break;
    case 10:  // lathe's whole process group
      rc = kill(0, SIGTERM);
      break;
    case 11:  // another worker's memory (scalars[1] = its pid): read-only, so seccomp allows it
      std::snprintf(path, sizeof path, "/proc/%d/mem", static_cast<int>(a->scalars[1]));
      rc = open(path, O_RDONLY);
      break;
    case 12:  // SIGIO to lathe
      rc = fcntl(5, F_SETOWN, getppid());
      break;
    case 13: {  // pin lathe to one core
      cpu_set_t one;
      CPU_ZERO(&one);
      CPU_SET(0, &one);
      rc = sched_setaffinity(getppid(), sizeof one, &one);
      break;
    }
    case 14: {  // make lathe (or the baseline's worker) SCHED_IDLE
      sched_param p{};
      rc = sched_setscheduler(getppid(), SCHED_IDLE, &p);
      break;
    }
  }
  return rc < 0 ? errno : 0;
}
