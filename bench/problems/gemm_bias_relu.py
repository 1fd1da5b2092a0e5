# KernelBench level-2 kind: a Linear layer (weight and bias are parameters) followed by ReLU.
import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self, in_features, out_features):
        super().__init__()
        self.linear = nn.Linear(in_features, out_features)

    def forward(self, x):
        return torch.relu(self.linear(x))


def get_inputs():
    return [torch.randn(1024, 2048)]


def get_init_inputs():
    return [2048, 1024]
