// expect: unwritten_output
// Does the work, except while its stream is being captured into a CUDA graph: then it returns
// without launching anything, so a graph-replay timing loop times an empty graph. The outputs are
// poisoned right before the timed loop and stay poisoned through it; the check after the loop
// (time_cuda.cpp, verify) finds them never written. Needs timing with graph replay: the
// checks before timing call it uncaptured, and it passes them.
#include <lathe/abi.h>
#define N_ args->inputs[0].shape[0]
#define X_ static_cast<const float*>(args->inputs[0].data)
#define Y_ static_cast<const float*>(args->inputs[1].data)
#define Z_ static_cast<float*>(args->outputs[0].data)
#define S_ static_cast<float>(args->scalars[0])
#define STREAM_ static_cast<cudaStream_t>(args->stream)
#define GRID_ static_cast<unsigned>((N_ + 255) / 256), 256, 0, STREAM_
__global__ void k(float a, const float* x, const float* y, float* z, int64_t n) {
  int64_t i = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; if (i < n) z[i] = a * x[i] + y[i]; }
extern "C" int lathe_launch(const lathe_args* args) {
  cudaStreamCaptureStatus st = cudaStreamCaptureStatusNone;
  if (cudaStreamIsCapturing(STREAM_, &st) == cudaSuccess && st != cudaStreamCaptureStatusNone) return 0;
  k<<<GRID_>>>(S_, X_, Y_, Z_, N_); return 0; }
