# Sample 0, torch ops: hard tanh as a clamp.
import torch
import torch.nn as nn


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        return torch.clamp(x, -1.0, 1.0)
