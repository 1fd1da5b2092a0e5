# A KernelBench-format level-1 problem (the recorded real-model run, tests/data/modelnew_run):
# Swish, y = x * sigmoid(x), written the way KernelBench's level-1 problem 25 is: two eager ops.
import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        return x * torch.sigmoid(x)


batch_size = 16
dim = 16384


def get_inputs():
    return [torch.randn(batch_size, dim)]


def get_init_inputs():
    return []
