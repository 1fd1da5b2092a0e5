# lathe solve's suite (solve_cli_test): an elementwise chain, y = relu(x) * alpha, that the mock
# model fuses into one load_inline C++ loop (a ModelNew the gate builds, checks and times).
import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self, alpha):
        super().__init__()
        self.alpha = alpha

    def forward(self, x):
        return torch.relu(x) * self.alpha


def get_inputs():
    return [torch.randn(64, 300)]


def get_init_inputs():
    return [0.5]
