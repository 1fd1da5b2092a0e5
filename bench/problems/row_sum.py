# KernelBench level-1 kind: a sum over one dimension with keepdim, the dimension an init argument.
import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self, dim):
        super().__init__()
        self.dim = dim

    def forward(self, x):
        return torch.sum(x, dim=self.dim, keepdim=True)


def get_inputs():
    return [torch.randn(8192, 4096)]


def get_init_inputs():
    return [1]
