# expect: wrong_result
# Forgets the bias: the right shape and dtype, the wrong values.
import torch
import torch.nn as nn


class ModelNew(nn.Module):
    def __init__(self, in_features, out_features):
        super().__init__()
        self.fc = nn.Linear(in_features, out_features)

    def forward(self, x):
        return torch.nn.functional.gelu(x @ self.fc.weight.t())
