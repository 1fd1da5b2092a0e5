import torch
import torch.nn as nn


class Model(nn.Module):
    """C = A B for A of M x K and B of K x N."""

    def __init__(self):
        super().__init__()

    def forward(self, A: torch.Tensor, B: torch.Tensor) -> torch.Tensor:
        return torch.matmul(A, B)


M = 2048
K = 1024
N = 2048  # A and B 8 MiB each, C 16 MiB


def get_inputs():
    return [torch.randn(M, K), torch.randn(K, N)]


def get_init_inputs():
    return []
