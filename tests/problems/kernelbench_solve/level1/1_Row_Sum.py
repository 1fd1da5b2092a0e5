# lathe solve's suite (solve_cli_test): a reduction, each row's sum, that the mock model does not
# fuse (it declines).
import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        return torch.sum(x, dim=1)


def get_inputs():
    return [torch.randn(48, 200)]


def get_init_inputs():
    return []
