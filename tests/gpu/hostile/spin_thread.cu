// expect: resource_limit
// Correct on the device, but its first call starts a host thread that spins forever after
// lathe_launch has returned: it would steal a core from the baseline's process while that one is
// timed. The idle check after the first call (gate.cpp, idle_check: > 30% of a core used in a
// 50 ms idle window) catches it. Threads are allowed by the seccomp filter (clone with
// CLONE_THREAD), so only that check can.
#include <lathe/abi.h>
#define N_ args->inputs[0].shape[0]
#define X_ static_cast<const float*>(args->inputs[0].data)
#define Y_ static_cast<const float*>(args->inputs[1].data)
#define Z_ static_cast<float*>(args->outputs[0].data)
#define S_ static_cast<float>(args->scalars[0])
#define STREAM_ static_cast<cudaStream_t>(args->stream)
#define GRID_ static_cast<unsigned>((N_ + 255) / 256), 256, 0, STREAM_
#include <thread>
__global__ void k(float a, const float* x, const float* y, float* z, int64_t n) {
  int64_t i = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; if (i < n) z[i] = a * x[i] + y[i]; }
static bool started = false;
extern "C" int lathe_launch(const lathe_args* args) {
  if (!started) { started = true; std::thread([] { for (volatile unsigned long i = 0;; i = i + 1) {} }).detach(); }
  k<<<GRID_>>>(S_, X_, Y_, Z_, N_); return 0; }
