// expect: suspicious_speed
// Does the work on its stream and, on every call, also launches a spin kernel of tens of ms (by
// iteration count) on the legacy default stream, through a stream variable that is null at run time
// (the screen refuses literal default-stream launches, not this). The worker's stream is
// non-blocking, so the events on it do not wait for the spin: left alone, the spin would outlive
// the timed block and run, time-sliced, while the next process (the baseline) is timed. The
// worker synchronizes the whole device at the end of every block, so the spin ends inside the
// candidate's own block and lathe's clock sees it (tens of ms per call) while the stream's events
// see microseconds; timing.cpp's cross-check of the two refuses the kernel: work outside the
// timed stream. It passes the checks (it is correct).
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
// A spin of tens of milliseconds by iteration count (reading %globaltimer would be refused by the
// PTX screen before this test saw the cross-check): 2^24 dependent multiply-adds.
__global__ void spin(long long iterations, unsigned long long* sink) {
  unsigned long long x = threadIdx.x;
  for (long long i = 0; i < iterations; ++i) { x = x * 6364136223846793005ull + 1; asm volatile("" : "+l"(x)); }
  if (x == 42) *sink = x; }
static cudaStream_t other;  // zero-initialized: the legacy default stream
extern "C" int lathe_launch(const lathe_args* args) {
  k<<<GRID_>>>(S_, X_, Y_, Z_, N_);
  spin<<<1, 1, 0, other>>>(1ll << 24, reinterpret_cast<unsigned long long*>(Z_));
  return cudaPeekAtLastError() == cudaSuccess ? 0 : 1; }
