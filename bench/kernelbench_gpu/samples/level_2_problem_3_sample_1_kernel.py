# Sample 1, inline CUDA (load_inline): torch.mm for the GEMM, then a hand-written epilogue,
# x + scale * (y + bias) in one pass, in place on the GEMM's fresh output.
import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

cpp_source = "torch::Tensor kb_scale_residual_(torch::Tensor y, torch::Tensor b, torch::Tensor x, double scale);"

cuda_source = r"""
#include <torch/extension.h>
#include <ATen/cuda/CUDAContext.h>
#include <c10/cuda/CUDAException.h>

__global__ void kb_scale_residual_kernel(float* __restrict__ y, const float* __restrict__ b,
                                         const float* __restrict__ x, int64_t n, int64_t cols, float scale) {
  for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < n; i += (int64_t)gridDim.x * blockDim.x)
    y[i] = x[i] + scale * (y[i] + b[i % cols]);
}

torch::Tensor kb_scale_residual_(torch::Tensor y, torch::Tensor b, torch::Tensor x, double scale) {
  TORCH_CHECK(y.is_cuda() && y.scalar_type() == torch::kFloat32 && y.is_contiguous() && y.dim() == 2,
              "kb_scale_residual_: a contiguous 2-D float32 CUDA tensor");
  TORCH_CHECK(b.numel() == y.size(1) && x.sizes() == y.sizes(), "kb_scale_residual_: shapes");
  auto bc = b.contiguous();
  auto xc = x.contiguous();
  const int64_t n = y.numel();
  if (n == 0) return y;
  const int threads = 256;
  const int blocks = (int)std::min<int64_t>((n + threads - 1) / threads, 1 << 20);
  kb_scale_residual_kernel<<<blocks, threads, 0, at::cuda::getCurrentCUDAStream()>>>(
      y.data_ptr<float>(), bc.data_ptr<float>(), xc.data_ptr<float>(), n, y.size(1), (float)scale);
  C10_CUDA_KERNEL_LAUNCH_CHECK();
  return y;
}
"""

ext = load_inline(name="kbgpu_l2_p3_s1_kb_scale_residual", cpp_sources=cpp_source, cuda_sources=cuda_source,
                  functions=["kb_scale_residual_"])


class ModelNew(nn.Module):
    def __init__(self, features, scale):
        super().__init__()
        self.linear = nn.Linear(features, features)
        self.scale = float(scale)

    def forward(self, x):
        return ext.kb_scale_residual_(torch.mm(x, self.linear.weight.t()), self.linear.bias, x, self.scale)
