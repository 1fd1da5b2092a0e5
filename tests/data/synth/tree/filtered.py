# A fixture for lathe synth's filters (tests/integration/synth_test.cpp): each module runs, and
# each is refused by one filter in the sandbox. Noisy, Overflows, Passthrough and Wide declare
# their inputs (one candidate each); Ignores does not (every guessed candidate runs and fails the same filter).
from typing import Annotated

import torch
from torch import nn


class Noisy(nn.Module):
    """nondeterministic: a fresh random draw in every forward."""

    def forward(self, x: Annotated[torch.Tensor, (4, 16)]):
        return x + torch.randn_like(x)


class Overflows(nn.Module):
    """not finite: the log of a negative number is NaN."""

    def forward(self, x: Annotated[torch.Tensor, (4, 16)]):
        return torch.log(x - 100.0)


class Ignores(nn.Module):
    """constant: the output does not depend on the input's values."""

    def __init__(self, features: int):
        super().__init__()
        self.bias = nn.Parameter(torch.ones(features))

    def forward(self, x):
        return x * 0 + self.bias


class Passthrough(nn.Module):
    """returns its input: a view of x, no work (lathe refuses a candidate that does the same)."""

    def forward(self, x: Annotated[torch.Tensor, (4, 16)]):
        return x.view(2, 32)


class Wide(nn.Module):
    """too many tensors: x, 8 weights, 8 biases and the output are 18, past the gate's 16."""

    def __init__(self):
        super().__init__()
        self.layers = nn.ModuleList([nn.Linear(4, 4) for _ in range(8)])

    def forward(self, x: Annotated[torch.Tensor, (2, 4)]):
        for layer in self.layers:
            x = layer(x)
        return x
