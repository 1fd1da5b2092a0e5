import torch
import torch.nn as nn

CHUNK = 2  # rows of x per call of the linear layer


class ModelNew(nn.Module):
    def __init__(self, in_features, out_features):
        super().__init__()
        self.fc = nn.Linear(in_features, out_features)

    def forward(self, x):
        parts = [self.fc(x[i:i + CHUNK]) for i in range(0, x.shape[0], CHUNK)]
        return torch.nn.functional.gelu(torch.cat(parts))
