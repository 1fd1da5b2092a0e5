# Sample 0, torch ops: the sigmoid spelled out as 1 / (1 + exp(-x)).
import torch
import torch.nn as nn


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        return 1.0 / (1.0 + torch.exp(-x))
