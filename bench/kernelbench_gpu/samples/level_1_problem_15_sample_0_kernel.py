# Sample 0, torch ops: RMS norm as x times rsqrt(mean(x^2) + eps).
import torch
import torch.nn as nn


class ModelNew(nn.Module):
    def __init__(self, features, eps=1e-5):
        super().__init__()
        self.eps = eps

    def forward(self, x):
        return x * torch.rsqrt(x.pow(2).mean(dim=-1, keepdim=True) + self.eps)
