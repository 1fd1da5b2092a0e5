// expect: forbidden
// Fetches a driver-API function by name (cuStreamSetAttribute: the persistent-L2 window without
// the runtime's banned name), the way dlsym would: nothing of it shows in the object's imports.
#include <lathe/abi.h>
extern "C" int lathe_launch(const lathe_args* args) {
  void* fn = nullptr;
  cudaDriverEntryPointQueryResult q;
  if (cudaGetDriverEntryPointByVersion("cuStreamSetAttribute", &fn, 12000, cudaEnableDefault, &q) != cudaSuccess) return 1;
  return fn == nullptr;
}
