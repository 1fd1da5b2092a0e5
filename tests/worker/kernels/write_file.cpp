// Writes a file whose path comes in its uint8 input (NUL-terminated).
#include <lathe/abi.h>

#include <cerrno>
#include <cstdio>

extern "C" int lathe_launch(const lathe_args* a) {
  const char* path = static_cast<const char*>(a->inputs[0].data);
  FILE* f = std::fopen(path, "w");
  if (!f) return errno;
  std::fputs("escaped\n", f);
  std::fclose(f);
  return 0;
}
