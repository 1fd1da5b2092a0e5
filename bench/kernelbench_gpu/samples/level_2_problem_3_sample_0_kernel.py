# Sample 0, torch ops: the residual, the scale and the bias folded into one addmm:
# x + s (x W^T + b) = (x + s b) + s x W^T.
import torch
import torch.nn as nn


class ModelNew(nn.Module):
    def __init__(self, features, scale):
        super().__init__()
        self.linear = nn.Linear(features, features)
        self.scale = scale

    def forward(self, x):
        return torch.addmm(x + self.scale * self.linear.bias, x, self.linear.weight.t(), alpha=self.scale)
