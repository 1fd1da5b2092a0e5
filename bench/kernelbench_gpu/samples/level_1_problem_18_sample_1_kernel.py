# Sample 1, torch ops (no hand-written GEMV): torch.mv on the column as a vector.
import torch
import torch.nn as nn


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, A, B):
        return torch.mv(A, B.view(-1)).unsqueeze(1)
