# expect: load_error
# Its layer has another name than the Model's (linear, not fc): the Model's parameters cannot be
# bound to it by name.
import torch
import torch.nn as nn


class ModelNew(nn.Module):
    def __init__(self, in_features, out_features):
        super().__init__()
        self.linear = nn.Linear(in_features, out_features)

    def forward(self, x):
        return torch.nn.functional.gelu(self.linear(x))
