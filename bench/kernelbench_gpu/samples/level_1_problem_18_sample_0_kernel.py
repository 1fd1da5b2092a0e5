# Sample 0, torch ops: the product as a row-wise multiply and sum (a different, memory-bound algorithm).
import torch
import torch.nn as nn


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, A, B):
        return (A * B.t()).sum(dim=1, keepdim=True)
