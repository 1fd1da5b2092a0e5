// Never returns (volatile, so the loop is not undefined behaviour the compiler may delete).
#include <lathe/abi.h>

extern "C" int lathe_launch(const lathe_args*) {
  volatile unsigned long spin = 0;
  for (;;) spin = spin + 1;
}
