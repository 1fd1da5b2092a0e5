// expect: wrong
// row_sum.py accumulated in half precision: each row's 4096 terms summed as __half, so the
// result is off by far more than fp32 rounding (and by more than 1e-2 on many rows).
#include <cuda_fp16.h>
#include <cuda_runtime.h>
#include <lathe/abi.h>

__global__ void row_sum(const float* x, float* y, long rows, int cols) {
  const long row = blockIdx.x * (long)blockDim.x + threadIdx.x;
  if (row >= rows) return;
  __half s = __float2half(0.f);
  for (int c = 0; c < cols; ++c) s = __hadd(s, __float2half(x[row * cols + c]));
  y[row] = __half2float(s);
}

extern "C" int lathe_launch(const lathe_args* a) {
  const DLTensor& X = a->inputs[0];
  const long rows = X.shape[0];
  row_sum<<<(unsigned)((rows + 127) / 128), 128, 0, static_cast<cudaStream_t>(a->stream)>>>(
      static_cast<const float*>(X.data), static_cast<float*>(a->outputs[0].data), rows, (int)X.shape[1]);
  return cudaGetLastError() == cudaSuccess ? 0 : 1;
}
