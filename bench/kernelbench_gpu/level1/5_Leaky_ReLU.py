import torch
import torch.nn as nn


class Model(nn.Module):
    """Element-wise leaky ReLU with the slope given at construction."""

    def __init__(self, negative_slope: float = 0.01):
        super().__init__()
        self.negative_slope = negative_slope

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return nn.functional.leaky_relu(x, negative_slope=self.negative_slope)


batch_size = 4096
dim = 2048  # 8M floats, 32 MiB


def get_inputs():
    return [torch.randn(batch_size, dim)]


def get_init_inputs():
    return [0.05]
