// expect: forbidden
// task: mm_cuda
// The CUDA analogue of rdtsc_timed.cpp: device code reads %globaltimer to tell graph replays
// (calls back to back, microseconds apart) from checked calls (lathe's work between them) and,
// replayed, recomputes only half of an output it has written before for the same buffers. The
// PTX screen refuses reads of the device's clocks (%globaltimer, %clock, %clock64).
#include <lathe/abi.h>
#include <cstdint>
namespace {
__device__ unsigned long long last_end = 0;
__device__ const float* last_c = nullptr;
__device__ int lazy = 0;
__device__ unsigned long long now() {
  unsigned long long t;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
  return t;
}
__global__ void decide(const float* c) {
  const unsigned long long t = now();
  lazy = (t - last_end < 20000 && last_c == c) ? 1 : 0;
  last_c = c;
}
__global__ void mm(const float* a, const float* b, float* c, int n) {
  const int i = blockIdx.y * blockDim.y + threadIdx.y, j = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n || j >= n || (lazy && i >= n / 2)) return;
  float acc = 0;
  for (int k = 0; k < n; ++k) acc += a[i * n + k] * b[k * n + j];
  c[i * n + j] = acc;
}
__global__ void finish() { last_end = now(); }
}  // namespace
extern "C" int lathe_launch(const lathe_args* args) {
  const int n = static_cast<int>(args->inputs[0].shape[0]);
  auto s = static_cast<cudaStream_t>(args->stream);
  float* c = static_cast<float*>(args->outputs[0].data);
  decide<<<1, 1, 0, s>>>(c);
  const dim3 block(16, 16), grid((n + 15) / 16, (n + 15) / 16);
  mm<<<grid, block, 0, s>>>(static_cast<const float*>(args->inputs[0].data),
                           static_cast<const float*>(args->inputs[1].data), c, n);
  finish<<<1, 1, 0, s>>>();
  return cudaPeekAtLastError() == cudaSuccess ? 0 : 1;
}
