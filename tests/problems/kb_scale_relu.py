# KernelBench format (Model, get_inputs, get_init_inputs): y = relu(x) * alpha, alpha an
# initialization argument, so an ABI scalar. It prints on import: the worker's replies must not
# be disturbed by a problem that writes to stdout.
import torch
import torch.nn as nn

print("kb_scale_relu: imported")


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
