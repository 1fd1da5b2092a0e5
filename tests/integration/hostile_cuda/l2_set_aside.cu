// expect: forbidden
// Sets aside L2 for persisting accesses (the device-wide half of the persistent-L2 trick; the
// other half, an access-policy window, is persistent_l2.cu).
#include <lathe/abi.h>
extern "C" int lathe_init(void) {
  return cudaDeviceSetLimit(cudaLimitPersistingL2CacheSize, 32u << 20) != cudaSuccess;
}
extern "C" int lathe_launch(const lathe_args* args) { return 0; }
