# Sample 1, torch ops (no hand-written GEMM): the product through einsum.
import torch
import torch.nn as nn


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, A, B):
        return torch.einsum("ik,kj->ij", A, B)
