import torch
import torch.nn as nn


class Model(nn.Module):
    """A 2D convolution, square kernel, stride 1, 'same' padding, with bias."""

    def __init__(self, in_channels: int, out_channels: int, kernel_size: int):
        super().__init__()
        self.conv = nn.Conv2d(in_channels, out_channels, kernel_size, padding=kernel_size // 2)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.conv(x)


batch_size = 16
in_channels = 16
out_channels = 32
kernel_size = 3
height = 128
width = 128  # x 16 MiB, the output 32 MiB


def get_inputs():
    return [torch.randn(batch_size, in_channels, height, width)]


def get_init_inputs():
    return [in_channels, out_channels, kernel_size]
