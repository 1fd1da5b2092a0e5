// Tries one way out of the sandbox, chosen by scalars[0]; returns errno if the call failed.
#include <fcntl.h>
#include <lathe/abi.h>
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
    case 0: rc = fork(); if (rc == 0) _exit(0); break;
    case 1: rc = execl("/bin/true", "true", static_cast<char*>(nullptr)); break;
    case 2: rc = socket(AF_INET, SOCK_STREAM, 0); break;
    case 3: rc = kill(getppid(), SIGTERM); break;
    case 4:
      r.rlim_cur = r.rlim_max = RLIM_INFINITY;
      rc = setrlimit(RLIMIT_CPU, &r);
      break;
    case 5: rc = ftruncate(3, 0); break;  // shrink lathe's shared region under it
    case 6: rc = unlink("/tmp/lathe-worker-test-victim"); break;
    case 7: rc = ptrace(PTRACE_ATTACH, getppid(), nullptr, nullptr); break;
    case 8:
      std::snprintf(path, sizeof path, "/proc/%d/mem", static_cast<int>(getppid()));
      rc = open(path, O_RDWR);
      break;
    case 9: rc = getrlimit(RLIMIT_CPU, &r); break;  // reading a limit is allowed
    case 10: rc = kill(0, SIGTERM); break;          // lathe's whole process group
  }
  return rc < 0 ? errno : 0;
}
