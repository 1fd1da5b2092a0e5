# lathe solve's suite (solve_cli_test): a problem lathe cannot import (an initialization argument
# that is no number): that problem's failure, not the whole run's.
import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self, mode):
        super().__init__()
        self.mode = mode

    def forward(self, x):
        return x


def get_inputs():
    return [torch.randn(4)]


def get_init_inputs():
    return ["fast"]
