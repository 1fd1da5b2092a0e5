// expect: forbidden
// Calls the driver API directly (cuMemAlloc: an allocation without the runtime's banned name).
// A task that allows the library "cuda" (for TMA tensor maps) still lets a candidate import only
// the tensor-map encoders and error strings; the object screen refuses every other cu* import.
#include <cuda.h>
#include <lathe/abi.h>
extern "C" int lathe_launch(const lathe_args* args) {
  (void)args;
  CUdeviceptr p = 0;
  return cuMemAlloc(&p, 1 << 20) != CUDA_SUCCESS;
}
