# Sample 0, torch ops: the mean as the sum over the count.
import torch
import torch.nn as nn


class ModelNew(nn.Module):
    def __init__(self, dim):
        super().__init__()
        self.dim = dim

    def forward(self, x):
        return x.sum(dim=self.dim) / x.shape[self.dim]
