// expect: forbidden
// Allocates inside lathe_launch: breaks graph capture and the ABI (abi.h).
#include <lathe/abi.h>
extern "C" int lathe_launch(const lathe_args* a) {
  void* p = nullptr;
  cudaMalloc(&p, 1 << 20);
  return p == nullptr;
}
