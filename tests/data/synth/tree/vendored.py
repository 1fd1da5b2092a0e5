# SPDX-License-Identifier: Apache-2.0
# A fixture for lathe synth's dedup (tests/integration/synth_test.cpp): GeluCopy is layers.py's
# GeluBlock copied into another file with its class, base, helper, constants, arguments and
# attributes renamed and its comments changed (the same code: dropped by the normalized ast hash);
# Summed computes what layers.py's Untyped does another way (the same behaviour).
import math
from typing import Annotated

import torch
import torch.nn as nn

WIDTH = 64
FACTOR = 1.0 / math.sqrt(WIDTH)


def gelu_times_factor(t):
    """Scaled GELU, vendored."""
    return torch.nn.functional.gelu(t) * FACTOR


class Parent(nn.Module):
    def __init__(self, size: int = WIDTH):
        super().__init__()
        # a projection of the same width
        self.linear = nn.Linear(size, size)


class GeluCopy(Parent):
    def forward(self, inp: Annotated[torch.Tensor, (8, WIDTH)]) -> torch.Tensor:
        return gelu_times_factor(self.linear(inp))


class Summed(nn.Module):
    def forward(self, x):
        return x + x
