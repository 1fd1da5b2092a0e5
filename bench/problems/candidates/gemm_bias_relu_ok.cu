// expect: correct
// gemm_bias_relu.py: y = relu(x W^T + b), x [M,K], W [N,K] (linear_weight), b [N] (linear_bias);
// 64x64 output tiles, 16-deep K slices in shared memory, 4x4 outputs per thread, fp32 FMA.
#include <cuda_runtime.h>
#include <lathe/abi.h>

constexpr int T = 64, KS = 16;

__global__ void gemm_bias_relu(const float* x, const float* w, const float* b, float* y, int M, int N, int K) {
  __shared__ float xs[KS][T + 1], ws[KS][T + 1];
  const int tx = threadIdx.x % 16, ty = threadIdx.x / 16;
  const int row0 = blockIdx.y * T, col0 = blockIdx.x * T;
  float acc[4][4] = {};
  for (int k0 = 0; k0 < K; k0 += KS) {
    for (int i = threadIdx.x; i < T * KS; i += 256) {
      const int r = i / KS, k = i % KS;
      xs[k][r] = (row0 + r < M && k0 + k < K) ? x[(long)(row0 + r) * K + k0 + k] : 0.f;
      ws[k][r] = (col0 + r < N && k0 + k < K) ? w[(long)(col0 + r) * K + k0 + k] : 0.f;
    }
    __syncthreads();
    for (int k = 0; k < KS; ++k)
      for (int i = 0; i < 4; ++i)
        for (int j = 0; j < 4; ++j) acc[i][j] = fmaf(xs[k][ty * 4 + i], ws[k][tx * 4 + j], acc[i][j]);
    __syncthreads();
  }
  for (int i = 0; i < 4; ++i)
    for (int j = 0; j < 4; ++j) {
      const int r = row0 + ty * 4 + i, c = col0 + tx * 4 + j;
      if (r < M && c < N) y[(long)r * N + c] = fmaxf(acc[i][j] + b[c], 0.f);
    }
}

extern "C" int lathe_launch(const lathe_args* a) {
  const DLTensor &X = a->inputs[0], &W = a->inputs[1];
  const int M = (int)X.shape[0], K = (int)X.shape[1], N = (int)W.shape[0];
  dim3 grid((N + T - 1) / T, (M + T - 1) / T);
  gemm_bias_relu<<<grid, 256, 0, static_cast<cudaStream_t>(a->stream)>>>(
      static_cast<const float*>(X.data), static_cast<const float*>(W.data),
      static_cast<const float*>(a->inputs[2].data), static_cast<float*>(a->outputs[0].data), M, N, K);
  return cudaGetLastError() == cudaSuccess ? 0 : 1;
}
