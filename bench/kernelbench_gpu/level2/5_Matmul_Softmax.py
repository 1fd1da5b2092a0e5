import torch
import torch.nn as nn


class Model(nn.Module):
    """A linear layer followed by a softmax over its outputs (each row)."""

    def __init__(self, in_features: int, out_features: int):
        super().__init__()
        self.linear = nn.Linear(in_features, out_features)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.softmax(self.linear(x), dim=1)


batch_size = 2048
in_features = 1024
out_features = 1024  # x 8 MiB, the weight 4 MiB


def get_inputs():
    return [torch.randn(batch_size, in_features)]


def get_init_inputs():
    return [in_features, out_features]
