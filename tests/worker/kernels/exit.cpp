// exit() in the middle of a call (built with -DEXIT_CODE=n).
#include <lathe/abi.h>

#include <cstdlib>

extern "C" int lathe_launch(const lathe_args*) {
  std::exit(EXIT_CODE);
}
