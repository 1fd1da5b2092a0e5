// expect: unwritten_output
// Skips the last block of the output.
#include <lathe/abi.h>
#define N_ args->inputs[0].shape[0]
#define X_ static_cast<const float*>(args->inputs[0].data)
#define Y_ static_cast<const float*>(args->inputs[1].data)
#define Z_ static_cast<float*>(args->outputs[0].data)
#define S_ static_cast<float>(args->scalars[0])
#define STREAM_ static_cast<cudaStream_t>(args->stream)
#define GRID_ static_cast<unsigned>((N_ + 255) / 256), 256, 0, STREAM_
__global__ void k(float a, const float* x, const float* y, float* z, int64_t n) {
  int64_t i = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; if (i < n - 256) z[i] = a * x[i] + y[i]; }
extern "C" int lathe_launch(const lathe_args* args) { k<<<GRID_>>>(S_, X_, Y_, Z_, N_); return 0; }
