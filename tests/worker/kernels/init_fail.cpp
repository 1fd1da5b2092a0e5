#include <lathe/abi.h>

extern "C" int lathe_init(void) {
  return 5;
}
extern "C" int lathe_launch(const lathe_args*) {
  return 0;
}
