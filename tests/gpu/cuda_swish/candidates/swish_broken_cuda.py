# expect: compile_error
# Inline CUDA that does not compile (a missing semicolon): the extension's build fails before any
# worker starts, with nvcc's log in the diagnostics.
import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

cpp_source = "torch::Tensor swish(torch::Tensor x);"

cuda_source = r"""
#include <torch/extension.h>

__global__ void swish_kernel(const float* x, float* y, int64_t n) {
  int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x
  if (i < n) y[i] = x[i] / (1.0f + expf(-x[i]));
}

torch::Tensor swish(torch::Tensor x) {
  auto y = torch::empty_like(x);
  const int64_t n = x.numel();
  swish_kernel<<<(n + 255) / 256, 256>>>(x.data_ptr<float>(), y.data_ptr<float>(), n);
  return y;
}
"""

ext = load_inline(name="lathe_test_swish_broken", cpp_sources=cpp_source, cuda_sources=cuda_source,
                  functions=["swish"])


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        return ext.swish(x)
