# Sample 1, inline CUDA (load_inline): torch.mm for the GEMM, then a hand-written epilogue, bias +
# the exact GELU (erff, as F.gelu's default) in one pass, in place on the GEMM's fresh output (one
# thread per element, grid-stride).
import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

cpp_source = "torch::Tensor kb_bias_gelu_(torch::Tensor y, torch::Tensor b);"

cuda_source = r"""
#include <torch/extension.h>
#include <ATen/cuda/CUDAContext.h>
#include <c10/cuda/CUDAException.h>

__global__ void kb_bias_gelu_kernel(float* __restrict__ y, const float* __restrict__ b, int64_t n, int64_t cols) {
  for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < n; i += (int64_t)gridDim.x * blockDim.x) {
    const float v = y[i] + b[i % cols];
    y[i] = 0.5f * v * (1.0f + erff(v * 0.70710678118654752f));
  }
}

torch::Tensor kb_bias_gelu_(torch::Tensor y, torch::Tensor b) {
  TORCH_CHECK(y.is_cuda() && y.scalar_type() == torch::kFloat32 && y.is_contiguous() && y.dim() == 2,
              "kb_bias_gelu_: a contiguous 2-D float32 CUDA tensor");
  TORCH_CHECK(b.numel() == y.size(1), "kb_bias_gelu_: one bias per column");
  auto bc = b.contiguous();
  const int64_t n = y.numel();
  if (n == 0) return y;
  const int threads = 256;
  const int blocks = (int)std::min<int64_t>((n + threads - 1) / threads, 1 << 20);
  kb_bias_gelu_kernel<<<blocks, threads, 0, at::cuda::getCurrentCUDAStream()>>>(
      y.data_ptr<float>(), bc.data_ptr<float>(), n, y.size(1));
  C10_CUDA_KERNEL_LAUNCH_CHECK();
  return y;
}
"""

ext = load_inline(name="kbgpu_l2_p2_s1_kb_bias_gelu", cpp_sources=cpp_source, cuda_sources=cuda_source,
                  functions=["kb_bias_gelu_"])


class ModelNew(nn.Module):
    def __init__(self, in_features, out_features):
        super().__init__()
        self.linear = nn.Linear(in_features, out_features)

    def forward(self, x):
        return ext.kb_bias_gelu_(torch.mm(x, self.linear.weight.t()), self.linear.bias)
