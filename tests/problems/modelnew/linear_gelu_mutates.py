# expect: input_mutated
# Scales its input in place, then undoes it in the result: the input's bytes changed.
import torch
import torch.nn as nn


class ModelNew(nn.Module):
    def __init__(self, in_features, out_features):
        super().__init__()
        self.fc = nn.Linear(in_features, out_features)

    def forward(self, x):
        x.mul_(2.0)
        return torch.nn.functional.gelu(self.fc(x * 0.5))
