// expect: launch_error
// pipe-limit: 16777216
// Fills pipes with data until it can open no more descriptors (at most 20,000 pipes) and says how
// many bytes it holds, as its error message: kernel memory that the resident-memory watchdog never
// sees. Up to the inherited descriptor limit (20,000 on the red team's machine) that was ~490 MiB
// a worker; the worker's descriptor limit now bounds it (hostile_test reads the figure).
#include <lathe/abi.h>
#include <fcntl.h>
#include <unistd.h>
#include <cstdio>
extern "C" int lathe_launch(const lathe_args* a) {
  static char page[4096];
  unsigned long long held = 0;
  int pipes = 0;
  for (; pipes < 20000; ++pipes) {
    int p[2];
    if (pipe2(p, O_NONBLOCK) != 0) break;
    for (;;) {
      const ssize_t n = write(p[1], page, sizeof page);
      if (n <= 0) break;
      held += static_cast<unsigned long long>(n);
    }
  }
  std::snprintf(a->error, a->error_bytes, "held %llu bytes in %d pipes", held, pipes);
  return 1;
}
