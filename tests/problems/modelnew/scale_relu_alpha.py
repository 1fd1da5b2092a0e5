# expect: ok
# The Model's constructor argument (alpha) comes to ModelNew's constructor.
import torch
import torch.nn as nn


class ModelNew(nn.Module):
    def __init__(self, alpha):
        super().__init__()
        self.alpha = alpha

    def forward(self, x):
        return torch.clamp_min(x, 0.0) * self.alpha
