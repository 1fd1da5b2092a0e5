// expect: cached_output
// Computes once, then returns the first result from a private device buffer.
#include <lathe/abi.h>
#define N_ args->inputs[0].shape[0]
#define X_ static_cast<const float*>(args->inputs[0].data)
#define Y_ static_cast<const float*>(args->inputs[1].data)
#define Z_ static_cast<float*>(args->outputs[0].data)
#define S_ static_cast<float>(args->scalars[0])
#define STREAM_ static_cast<cudaStream_t>(args->stream)
#define GRID_ static_cast<unsigned>((N_ + 255) / 256), 256, 0, STREAM_
__device__ float saved[1 << 21];
__global__ void save(float a, const float* x, const float* y, int64_t n) {
  int64_t i = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; if (i < n) saved[i] = a * x[i] + y[i]; }
__global__ void replay(float* z, int64_t n) { int64_t i = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; if (i < n) z[i] = saved[i]; }
static bool done = false;
extern "C" int lathe_launch(const lathe_args* args) {
  if (!done) { save<<<GRID_>>>(S_, X_, Y_, N_); done = true; }
  replay<<<GRID_>>>(Z_, N_); return 0; }
