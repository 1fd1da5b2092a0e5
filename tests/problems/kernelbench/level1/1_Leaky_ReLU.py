# A KernelBench-format problem of the test suite in KernelBench's layout (bench_cli_test):
# leaky ReLU with the slope as the constructor's argument.
import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self, negative_slope):
        super().__init__()
        self.negative_slope = negative_slope

    def forward(self, x):
        return torch.nn.functional.leaky_relu(x, self.negative_slope)


def get_inputs():
    return [torch.randn(40, 128)]


def get_init_inputs():
    return [0.1]
