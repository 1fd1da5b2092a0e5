# expect: ok
# A torch fallback inside a helper function (issue 42, item 6): forward calls `fused`, which runs
# the reference's Linear and gelu in PyTorch. The source screen reads only forward's own calls,
# so this passed --refuse-torch-fallback; the worker's observer sees aten::addmm and aten::gelu
# run. Checked as `ok` without the flag (a fallback is reported, not refused), `forbidden` with it.
import torch
import torch.nn as nn


def fused(fc, x):
    return torch.nn.functional.gelu(fc(x))


class ModelNew(nn.Module):
    def __init__(self, in_features, out_features):
        super().__init__()
        self.fc = nn.Linear(in_features, out_features)

    def forward(self, x):
        return fused(self.fc, x)
