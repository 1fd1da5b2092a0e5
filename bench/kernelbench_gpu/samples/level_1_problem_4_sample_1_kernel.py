# Sample 1, inline CUDA (load_inline): tanh through CUDA's tanhf (not a fast intrinsic).
# One thread per element in a grid-stride loop, launched on torch's current stream (so that lathe
# can capture it into a CUDA graph).
import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

cpp_source = "torch::Tensor kb_tanh(torch::Tensor x);"

cuda_source = r"""
#include <torch/extension.h>
#include <ATen/cuda/CUDAContext.h>
#include <c10/cuda/CUDAException.h>

__global__ void kb_tanh_kernel(const float* __restrict__ x, float* __restrict__ y, int64_t n) {
  for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < n; i += (int64_t)gridDim.x * blockDim.x) {
    const float v = x[i];
    y[i] = tanhf(v);
  }
}

torch::Tensor kb_tanh(torch::Tensor x) {
  TORCH_CHECK(x.is_cuda() && x.scalar_type() == torch::kFloat32, "kb_tanh: a float32 CUDA tensor");
  auto xc = x.contiguous();
  auto y = torch::empty_like(xc);
  const int64_t n = xc.numel();
  if (n == 0) return y;
  const int threads = 256;
  const int blocks = (int)std::min<int64_t>((n + threads - 1) / threads, 1 << 20);
  kb_tanh_kernel<<<blocks, threads, 0, at::cuda::getCurrentCUDAStream()>>>(
      xc.data_ptr<float>(), y.data_ptr<float>(), n);
  C10_CUDA_KERNEL_LAUNCH_CHECK();
  return y;
}
"""

ext = load_inline(name="kbgpu_l1_p4_s1_kb_tanh", cpp_sources=cpp_source, cuda_sources=cuda_source,
                  functions=["kb_tanh"])


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        return ext.kb_tanh(x)
