// Allocates until malloc returns NULL, then writes through the NULL pointer.
#include <lathe/abi.h>

#include <cstdlib>

static void* volatile keep[4096];

extern "C" int lathe_launch(const lathe_args*) {
  char* p = nullptr;
  for (int i = 0; i < 4096; ++i) {
    p = static_cast<char*>(std::malloc(size_t{64} << 20));
    keep[i] = p;
    if (!p) break;
  }
  char* volatile q = p;  // laundered: the compiler must not prove it null and emit a trap
  q[12345] = 1;
  return 0;
}
