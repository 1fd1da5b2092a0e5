// Succeeds twice, then fails with a code and a message.
#include <lathe/abi.h>

#include <cstdio>

extern "C" int lathe_launch(const lathe_args* a) {
  static int calls = 0;
  if (++calls < 3) return 0;
  std::snprintf(a->error, a->error_bytes, "unsupported shape %d", 7);
  return 42;
}
