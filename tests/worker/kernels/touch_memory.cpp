// Allocates and touches memory forever (until the watchdog, or RLIMIT_AS and a NULL write).
#include <lathe/abi.h>

#include <cstdlib>
#include <cstring>

static void* volatile last;

extern "C" int lathe_launch(const lathe_args*) {
  for (;;) {
    char* p = static_cast<char*>(std::malloc(size_t{8} << 20));
    char* volatile q = p;
    std::memset(q, 1, size_t{8} << 20);
    last = p;
  }
}
