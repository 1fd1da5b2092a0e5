# Sample 0, torch ops: tanh through the sigmoid, 2 sigmoid(2x) - 1.
import torch
import torch.nn as nn


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        return 2.0 * torch.sigmoid(2.0 * x) - 1.0
