# Sample 0, torch ops: softmax spelled out, exp(x - rowmax) over its row sum.
import torch
import torch.nn as nn


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        e = torch.exp(x - torch.amax(x, dim=1, keepdim=True))
        return e / e.sum(dim=1, keepdim=True)
