# expect: ok
# KernelBench's torch fallback written in C++: the inline extension computes the Model's own
# product and GELU with torch's CPU kernels called by namespace (at::cpu::addmm, at::cpu::gelu),
# which never enter torch's dispatcher, so no record of the ops that run sees them. `ok` as a
# candidate (it is correct), but a fallback: reported by default, refused with
# --refuse-torch-fallback from the extension's symbols (gate/screen.h dispatcher_bypass).
import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

source = r"""
#include <torch/extension.h>
#include <ATen/CPUFunctions.h>

torch::Tensor linear_gelu(torch::Tensor x, torch::Tensor w, torch::Tensor b) {
  at::AutoDispatchBelowAutograd below_autograd;  // what the dispatcher would have set
  return at::cpu::gelu(at::cpu::addmm(b, x, w.t()), "none");
}
"""

ext = load_inline(name="lathe_test_linear_gelu_cpu_kernels", cpp_sources=source, functions=["linear_gelu"])


class ModelNew(nn.Module):
    def __init__(self, in_features, out_features):
        super().__init__()
        self.fc = nn.Linear(in_features, out_features)

    def forward(self, x):
        return ext.linear_gelu(x.contiguous(), self.fc.weight, self.fc.bias)
