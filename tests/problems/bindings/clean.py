# expect: 
# A KernelBench-style binding with nothing to flag: the kernel does the work; PyTorch only
# allocates the output and builds the extension.
import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

source = r"""
#include <torch/extension.h>
__global__ void scale_relu(const float* x, float* y, float a, long n) {
  long i = blockIdx.x * (long)blockDim.x + threadIdx.x;
  if (i < n) y[i] = fmaxf(x[i], 0.f) * a;
}
torch::Tensor forward(torch::Tensor x, double a) {
  auto y = torch::empty_like(x);
  long n = x.numel();
  scale_relu<<<(n + 255) / 256, 256>>>(x.data_ptr<float>(), y.data_ptr<float>(), (float)a, n);
  return y;
}
"""
ext = load_inline(name="scale_relu", cpp_sources="torch::Tensor forward(torch::Tensor x, double a);",
                  cuda_sources=source, functions=["forward"])


class ModelNew(nn.Module):
    def __init__(self, alpha):
        super().__init__()
        self.alpha = alpha

    def forward(self, x):
        return ext.forward(x.contiguous(), self.alpha)
