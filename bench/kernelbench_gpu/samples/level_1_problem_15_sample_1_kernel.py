# Sample 1, inline CUDA (load_inline): RMS norm over the last dimension (the mean square, then the scaling).
# One block of 256 threads per row: block-wide reductions through warp shuffles and shared memory.
import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

cpp_source = "torch::Tensor kb_rms_norm(torch::Tensor x, double eps);"

cuda_source = r"""
#include <torch/extension.h>
#include <ATen/cuda/CUDAContext.h>
#include <c10/cuda/CUDAException.h>

// Block-wide reductions: each warp reduces with shuffles, warp leaders meet in shared memory,
// every warp reduces the leaders' values again, so every thread returns the block's result.
// blockDim.x is a multiple of 32, at most 1024; `sh` holds 32 floats.
__device__ float block_sum(float v, float* sh) {
  for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  if (lane == 0) sh[warp] = v;
  __syncthreads();
  v = lane < (int)(blockDim.x >> 5) ? sh[lane] : 0.0f;
  for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
  __syncthreads();  // sh is written again by the next reduction
  return v;
}

__device__ float block_max(float v, float* sh) {
  for (int o = 16; o > 0; o >>= 1) v = fmaxf(v, __shfl_xor_sync(0xffffffffu, v, o));
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  if (lane == 0) sh[warp] = v;
  __syncthreads();
  v = lane < (int)(blockDim.x >> 5) ? sh[lane] : -INFINITY;
  for (int o = 16; o > 0; o >>= 1) v = fmaxf(v, __shfl_xor_sync(0xffffffffu, v, o));
  __syncthreads();
  return v;
}

__global__ void kb_rms_norm_kernel(const float* __restrict__ x, float* __restrict__ y, int64_t cols, float eps) {
  __shared__ float sh[32];
  const float* xr = x + (int64_t)blockIdx.x * cols;
  float* yr = y + (int64_t)blockIdx.x * cols;
  float q = 0.0f;
  for (int64_t j = threadIdx.x; j < cols; j += blockDim.x) q += xr[j] * xr[j];
  const float inv = 1.0f / sqrtf(block_sum(q, sh) / (float)cols + eps);
  for (int64_t j = threadIdx.x; j < cols; j += blockDim.x) yr[j] = xr[j] * inv;
}

torch::Tensor kb_rms_norm(torch::Tensor x, double eps) {
  TORCH_CHECK(x.is_cuda() && x.scalar_type() == torch::kFloat32, "kb_rms_norm: a float32 CUDA tensor");
  auto xc = x.contiguous();
  auto y = torch::empty_like(xc);
  if (xc.numel() == 0) return y;
  const int64_t cols = xc.size(-1), rows = xc.numel() / cols;
  kb_rms_norm_kernel<<<(unsigned)rows, 256, 0, at::cuda::getCurrentCUDAStream()>>>(
      xc.data_ptr<float>(), y.data_ptr<float>(), cols, (float)eps);
  C10_CUDA_KERNEL_LAUNCH_CHECK();
  return y;
}
"""

ext = load_inline(name="kbgpu_l1_p15_s1_kb_rms_norm", cpp_sources=cpp_source, cuda_sources=cuda_source,
                  functions=["kb_rms_norm"])


class ModelNew(nn.Module):
    def __init__(self, features, eps=1e-5):
        super().__init__()
        self.eps = float(eps)

    def forward(self, x):
        return ext.kb_rms_norm(x, self.eps)
