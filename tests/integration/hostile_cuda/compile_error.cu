// expect: compile_error
#include <lathe/abi.h>
__global__ void k(float* y) { y[threadIdx.x] = undeclared_value; }
extern "C" int lathe_launch(const lathe_args* a) { return 0; }
