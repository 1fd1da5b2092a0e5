#include <lathe/abi.h>

#include <cstdlib>

extern "C" int lathe_launch(const lathe_args*) {
  std::abort();
}
