# expect: forbidden
# Skips lathe's copy of its result (issue 42, item 5): it walks the Python stack up to the
# harness's frame that holds the output views, computes into the output there and returns that
# view, so that copying it onto itself costs nothing. That got `ok` at 1.91x where the honest
# candidate read 0.94x; a result that lies in lathe's shared region is now refused.
import sys

import torch
import torch.nn as nn


def harness_outputs():
    f = sys._getframe(1)
    while f is not None:
        outs = f.f_locals.get("outputs")
        if isinstance(outs, list) and outs and isinstance(outs[0], torch.Tensor):
            return outs
        f = f.f_back
    return None


class ModelNew(nn.Module):
    def __init__(self, in_features, out_features):
        super().__init__()
        self.fc = nn.Linear(in_features, out_features)

    def forward(self, x):
        outs = harness_outputs()
        if outs is None:
            return torch.nn.functional.gelu(self.fc(x))
        o = outs[0]
        torch.addmm(self.fc.bias, x, self.fc.weight.t(), out=o)
        o.copy_(torch.nn.functional.gelu(o))
        return o
