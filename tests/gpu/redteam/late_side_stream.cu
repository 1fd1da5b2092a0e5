// expect: unwritten_output|suspicious_speed
// task: axpy_cuda
// The CUDA analogue of forge_reply.cpp: the work finishes after the timed stream's events. It is
// launched on the legacy default stream, named by its value ((cudaStream_t)1, cudaStreamLegacy)
// so that the screen's search for the name and for null-stream launches finds nothing; the
// worker's stream does not wait for it, so its events record nothing of it, while the checks
// (which synchronize the device) see correct outputs. Short, it is timed by graph replays: the
// capture ran its side launch once, outside the graph, and the worker poisons the outputs again
// after a capture, so the check after the timing loop finds them never written.
#include <lathe/abi.h>
__global__ void k(float a, const float* x, const float* y, float* z, int64_t n) {
  const int64_t i = blockIdx.x * int64_t{blockDim.x} + threadIdx.x;
  if (i < n) z[i] = a * x[i] + y[i];
}
extern "C" int lathe_launch(const lathe_args* args) {
  const int64_t n = args->inputs[0].shape[0];
  const auto side = reinterpret_cast<cudaStream_t>(static_cast<uintptr_t>(1));
  k<<<static_cast<unsigned>((n + 255) / 256), 256, 0, side>>>(
      static_cast<float>(args->scalars[0]), static_cast<const float*>(args->inputs[0].data),
      static_cast<const float*>(args->inputs[1].data), static_cast<float*>(args->outputs[0].data), n);
  return cudaPeekAtLastError() == cudaSuccess ? 0 : 1;
}
