# Sample 0, torch ops: F.conv2d on the layer's weight and bias, ReLU in place on its fresh output.
import torch
import torch.nn as nn
import torch.nn.functional as F


class ModelNew(nn.Module):
    def __init__(self, in_channels, out_channels, kernel_size):
        super().__init__()
        self.conv = nn.Conv2d(in_channels, out_channels, kernel_size, padding=kernel_size // 2)

    def forward(self, x):
        return F.conv2d(x, self.conv.weight, self.conv.bias, padding=self.conv.padding).clamp_min_(0.0)
