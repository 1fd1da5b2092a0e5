# Sample 1, inline CUDA (load_inline): torch's conv2d without its bias, then a hand-written
# epilogue, per-channel bias + ReLU in one pass, in place on the convolution's fresh output.
import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.utils.cpp_extension import load_inline

cpp_source = "torch::Tensor kb_channel_bias_relu_(torch::Tensor y, torch::Tensor b);"

cuda_source = r"""
#include <torch/extension.h>
#include <ATen/cuda/CUDAContext.h>
#include <c10/cuda/CUDAException.h>

// y is N x C x H x W, contiguous: element i belongs to channel (i / hw) % channels.
__global__ void kb_channel_bias_relu_kernel(float* __restrict__ y, const float* __restrict__ b, int64_t n,
                                            int64_t channels, int64_t hw) {
  for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < n; i += (int64_t)gridDim.x * blockDim.x) {
    const float v = y[i] + b[(i / hw) % channels];
    y[i] = v > 0.0f ? v : 0.0f;
  }
}

torch::Tensor kb_channel_bias_relu_(torch::Tensor y, torch::Tensor b) {
  TORCH_CHECK(y.is_cuda() && y.scalar_type() == torch::kFloat32 && y.is_contiguous() && y.dim() == 4,
              "kb_channel_bias_relu_: a contiguous 4-D float32 CUDA tensor");
  TORCH_CHECK(b.numel() == y.size(1), "kb_channel_bias_relu_: one bias per channel");
  auto bc = b.contiguous();
  const int64_t n = y.numel();
  if (n == 0) return y;
  const int threads = 256;
  const int blocks = (int)std::min<int64_t>((n + threads - 1) / threads, 1 << 20);
  kb_channel_bias_relu_kernel<<<blocks, threads, 0, at::cuda::getCurrentCUDAStream()>>>(
      y.data_ptr<float>(), bc.data_ptr<float>(), n, y.size(1), y.size(2) * y.size(3));
  C10_CUDA_KERNEL_LAUNCH_CHECK();
  return y;
}
"""

ext = load_inline(name="kbgpu_l2_p4_s1_kb_channel_bias_relu", cpp_sources=cpp_source, cuda_sources=cuda_source,
                  functions=["kb_channel_bias_relu_"])


class ModelNew(nn.Module):
    def __init__(self, in_channels, out_channels, kernel_size):
        super().__init__()
        self.conv = nn.Conv2d(in_channels, out_channels, kernel_size, padding=kernel_size // 2)

    def forward(self, x):
        y = F.conv2d(x, self.conv.weight, None, padding=self.conv.padding).contiguous()
        return ext.kb_channel_bias_relu_(y, self.conv.bias)
