# expect: wrong_result
# Keeps weights of its own (drawn again, in place, at every call) instead of the Model's.
import torch
import torch.nn as nn


class ModelNew(nn.Module):
    def __init__(self, in_features, out_features):
        super().__init__()
        self.fc = nn.Linear(in_features, out_features)
        self.mine = nn.Linear(in_features, out_features)
        self.mine.requires_grad_(False)

    def forward(self, x):
        return torch.nn.functional.gelu(self.mine(x))
