// Has the ABI tag (the header) but no lathe_launch.
#include <lathe/abi.h>

extern "C" int lathe_init(void) {
  return 0;
}
