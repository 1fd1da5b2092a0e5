# KernelBench level-1 kind: y = softmax(x, dim=1), fp32, (4096, 4096).
import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        return torch.softmax(x, dim=1)


def get_inputs():
    return [torch.randn(4096, 4096)]


def get_init_inputs():
    return []
