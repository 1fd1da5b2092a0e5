# KernelBench format with parameters: y = gelu(x @ W^T + b). The weight and the bias are the
# model's parameters: inputs after x, in state_dict order (fc.weight, fc.bias).
import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self, in_features, out_features):
        super().__init__()
        self.fc = nn.Linear(in_features, out_features)

    def forward(self, x):
        return torch.nn.functional.gelu(self.fc(x))


def get_inputs():
    return [torch.randn(8, 32)]


def get_init_inputs():
    return [32, 16]
