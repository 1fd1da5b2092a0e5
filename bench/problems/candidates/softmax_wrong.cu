// expect: wrong
// softmax.py normalized by the first 1024 columns' sum only: every row sums to more than 1.
#include <cuda_runtime.h>
#include <lathe/abi.h>

__global__ void softmax_rows(const float* x, float* y, int cols) {
  const float* r = x + (long)blockIdx.x * cols;
  float* o = y + (long)blockIdx.x * cols;
  __shared__ float m, s;
  if (threadIdx.x == 0) {
    float mm = -INFINITY, ss = 0.f;
    for (int c = 0; c < cols; ++c) mm = fmaxf(mm, r[c]);
    for (int c = 0; c < 1024 && c < cols; ++c) ss += expf(r[c] - mm);
    m = mm, s = ss;
  }
  __syncthreads();
  for (int c = threadIdx.x; c < cols; c += blockDim.x) o[c] = expf(r[c] - m) / s;
}

extern "C" int lathe_launch(const lathe_args* a) {
  const DLTensor& X = a->inputs[0];
  softmax_rows<<<(unsigned)X.shape[0], 256, 0, static_cast<cudaStream_t>(a->stream)>>>(
      static_cast<const float*>(X.data), static_cast<float*>(a->outputs[0].data), (int)X.shape[1]);
  return cudaGetLastError() == cudaSuccess ? 0 : 1;
}
