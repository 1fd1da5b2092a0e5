# expect: cached_output
# Computes once and returns its first answer for every later input.
import torch
import torch.nn as nn


class ModelNew(nn.Module):
    def __init__(self, in_features, out_features):
        super().__init__()
        self.fc = nn.Linear(in_features, out_features)
        self.first = None

    def forward(self, x):
        if self.first is None:
            self.first = torch.nn.functional.gelu(self.fc(x)).clone()
        return self.first
