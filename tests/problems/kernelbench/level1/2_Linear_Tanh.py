# A KernelBench-format problem with parameters: y = tanh(x W^T + b).
import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self, in_features, out_features):
        super().__init__()
        self.proj = nn.Linear(in_features, out_features)

    def forward(self, x):
        return torch.tanh(self.proj(x))


def get_inputs():
    return [torch.randn(16, 64)]


def get_init_inputs():
    return [64, 24]
