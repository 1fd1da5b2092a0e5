import torch
import torch.nn as nn


class Model(nn.Module):
    """A linear layer followed by the exact (erf) GELU."""

    def __init__(self, in_features: int, out_features: int):
        super().__init__()
        self.linear = nn.Linear(in_features, out_features)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return nn.functional.gelu(self.linear(x))


batch_size = 1024
in_features = 2048
out_features = 2048  # x 8 MiB, the weight 16 MiB


def get_inputs():
    return [torch.randn(batch_size, in_features)]


def get_init_inputs():
    return [in_features, out_features]
