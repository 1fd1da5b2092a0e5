# expect: ok
# A torch fallback written with contextlib.suppress (issue 42, item 6): the custom kernel raises,
# the error is swallowed, and a method that is not forward computes the reference's own ops in
# PyTorch. The source screen reads forward's calls and try/except handlers, so this passed
# --refuse-torch-fallback; the worker's observer sees aten::addmm and aten::gelu run. Checked
# as `ok` without the flag (a fallback is reported, not refused), `forbidden` with it.
import contextlib

import torch
import torch.nn as nn


def custom_linear_gelu(x, w, b):
    raise RuntimeError("the custom kernel is not built")


class ModelNew(nn.Module):
    def __init__(self, in_features, out_features):
        super().__init__()
        self.fc = nn.Linear(in_features, out_features)

    def forward(self, x):
        with contextlib.suppress(RuntimeError):
            return custom_linear_gelu(x, self.fc.weight, self.fc.bias)
        return self.reference_path(x)

    def reference_path(self, x):
        return torch.nn.functional.gelu(self.fc(x))
