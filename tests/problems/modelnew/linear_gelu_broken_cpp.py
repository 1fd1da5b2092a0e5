# expect: compile_error
# Inline C++ that does not compile: the compiler's log comes back, nothing runs.
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

ext = load_inline(name="lathe_test_broken", cpp_sources="torch::Tensor f(torch::Tensor x) { return x +; }",
                  functions=["f"])


class ModelNew(nn.Module):
    def __init__(self, in_features, out_features):
        super().__init__()
        self.fc = nn.Linear(in_features, out_features)

    def forward(self, x):
        return ext.f(x)
