// expect: cached_output
// kb_scale_relu: the first call's outputs kept on the device and written again by every later
// call, whatever its inputs.
#include <cuda_runtime.h>
#include <lathe/abi.h>

constexpr long capacity = 64 * 300;
__device__ float kept[capacity];

__global__ void scale_relu(const float* x, float* y, float alpha, long n, int replay) {
  const long i = blockIdx.x * (long)blockDim.x + threadIdx.x;
  if (i >= n) return;
  if (replay) {
    y[i] = kept[i];
  } else {
    y[i] = fmaxf(x[i], 0.f) * alpha;
    kept[i] = y[i];
  }
}

extern "C" int lathe_launch(const lathe_args* a) {
  static int calls = 0;
  const DLTensor& X = a->inputs[0];
  const long n = X.shape[0] * X.shape[1];
  if (n > capacity) return 2;
  scale_relu<<<(unsigned)((n + 255) / 256), 256, 0, static_cast<cudaStream_t>(a->stream)>>>(
      static_cast<const float*>(X.data), static_cast<float*>(a->outputs[0].data),
      static_cast<float>(a->scalars[0]), n, calls++ > 0);
  return cudaGetLastError() == cudaSuccess ? 0 : 1;
}
