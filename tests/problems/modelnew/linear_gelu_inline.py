# expect: ok
# Inline C++ through torch.utils.cpp_extension.load_inline, built at import: lathe builds it
# before the candidate runs, and the worker loads the built module.
import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

source = r"""
#include <torch/extension.h>
#include <cmath>

torch::Tensor linear_gelu(torch::Tensor x, torch::Tensor w, torch::Tensor b) {
  const int64_t m = x.size(0), k = x.size(1), n = w.size(0);
  auto y = torch::empty({m, n}, x.options());
  const float* px = x.data_ptr<float>();
  const float* pw = w.data_ptr<float>();
  const float* pb = b.data_ptr<float>();
  float* py = y.data_ptr<float>();
  for (int64_t i = 0; i < m; ++i)
    for (int64_t j = 0; j < n; ++j) {
      double s = pb[j];
      for (int64_t t = 0; t < k; ++t) s += double(px[i * k + t]) * pw[j * k + t];
      py[i * n + j] = float(0.5 * s * (1.0 + std::erf(s / std::sqrt(2.0))));
    }
  return y;
}
"""

ext = load_inline(name="lathe_test_linear_gelu", cpp_sources=source, functions=["linear_gelu"])


class ModelNew(nn.Module):
    def __init__(self, in_features, out_features):
        super().__init__()
        self.fc = nn.Linear(in_features, out_features)

    def forward(self, x):
        return ext.linear_gelu(x.contiguous(), self.fc.weight.contiguous(), self.fc.bias.contiguous())
