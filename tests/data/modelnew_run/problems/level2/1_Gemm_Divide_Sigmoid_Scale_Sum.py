# A KernelBench-format level-2 problem (the recorded real-model run, tests/data/modelnew_run): a
# Linear followed by an elementwise chain and a row reduction, each an eager op of its own.
import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self, in_features, out_features, divisor, scale):
        super().__init__()
        self.gemm = nn.Linear(in_features, out_features)
        self.divisor = divisor
        self.scale = scale

    def forward(self, x):
        x = self.gemm(x)
        x = x / self.divisor
        x = torch.sigmoid(x)
        x = x * self.scale
        return torch.sum(x, dim=1, keepdim=True)


batch_size = 1024
in_features = 128
out_features = 256


def get_inputs():
    return [torch.randn(batch_size, in_features)]


def get_init_inputs():
    return [in_features, out_features, 2.0, 1.5]
