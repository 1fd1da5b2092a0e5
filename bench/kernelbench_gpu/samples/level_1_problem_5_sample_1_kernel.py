# Sample 1, inline CUDA (load_inline): leaky ReLU with the constructor's slope.
# One thread per element in a grid-stride loop, launched on torch's current stream (so that lathe
# can capture it into a CUDA graph).
import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

cpp_source = "torch::Tensor kb_leaky_relu(torch::Tensor x, double slope);"

cuda_source = r"""
#include <torch/extension.h>
#include <ATen/cuda/CUDAContext.h>
#include <c10/cuda/CUDAException.h>

__global__ void kb_leaky_relu_kernel(const float* __restrict__ x, float* __restrict__ y, int64_t n, float slope) {
  for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < n; i += (int64_t)gridDim.x * blockDim.x) {
    const float v = x[i];
    y[i] = v > 0.0f ? v : v * slope;
  }
}

torch::Tensor kb_leaky_relu(torch::Tensor x, double slope) {
  TORCH_CHECK(x.is_cuda() && x.scalar_type() == torch::kFloat32, "kb_leaky_relu: a float32 CUDA tensor");
  auto xc = x.contiguous();
  auto y = torch::empty_like(xc);
  const int64_t n = xc.numel();
  if (n == 0) return y;
  const int threads = 256;
  const int blocks = (int)std::min<int64_t>((n + threads - 1) / threads, 1 << 20);
  kb_leaky_relu_kernel<<<blocks, threads, 0, at::cuda::getCurrentCUDAStream()>>>(
      xc.data_ptr<float>(), y.data_ptr<float>(), n, (float)slope);
  C10_CUDA_KERNEL_LAUNCH_CHECK();
  return y;
}
"""

ext = load_inline(name="kbgpu_l1_p5_s1_kb_leaky_relu", cpp_sources=cpp_source, cuda_sources=cuda_source,
                  functions=["kb_leaky_relu"])


class ModelNew(nn.Module):
    def __init__(self, negative_slope):
        super().__init__()
        self.negative_slope = float(negative_slope)

    def forward(self, x):
        return ext.kb_leaky_relu(x, self.negative_slope)
