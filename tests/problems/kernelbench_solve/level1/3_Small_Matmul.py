# lathe solve's suite (solve_cli_test): a matrix product, no elementwise chain for the mock model
# to fuse (it declines).
import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, a, b):
        return torch.matmul(a, b)


def get_inputs():
    return [torch.randn(32, 48), torch.randn(48, 16)]


def get_init_inputs():
    return []
