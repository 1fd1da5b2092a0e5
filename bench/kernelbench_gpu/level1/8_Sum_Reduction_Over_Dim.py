import torch
import torch.nn as nn


class Model(nn.Module):
    """Sum over one dimension, kept as size 1."""

    def __init__(self, dim: int):
        super().__init__()
        self.dim = dim

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.sum(x, dim=self.dim, keepdim=True)


batch_size = 64
dim1 = 512
dim2 = 256  # 8M floats, 32 MiB


def get_inputs():
    return [torch.randn(batch_size, dim1, dim2)]


def get_init_inputs():
    return [1]  # reduce over dim1
