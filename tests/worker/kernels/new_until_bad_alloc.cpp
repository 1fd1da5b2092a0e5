// C++ allocation until std::bad_alloc, which escapes lathe_launch.
#include <lathe/abi.h>

static char* volatile last;

extern "C" int lathe_launch(const lathe_args*) {
  for (;;) last = new char[size_t{64} << 20];
}
