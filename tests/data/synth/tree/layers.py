# SPDX-License-Identifier: MIT
# A fixture for lathe synth (tests/integration/synth_test.cpp): GeluBlock is kept with its
# in-file base, helper and constants; Untyped is refused (forward's input has no shape).
import math
from typing import Annotated

import torch
import torch.nn as nn

HIDDEN = 64
SCALE = 1.0 / math.sqrt(HIDDEN)


def scaled_gelu(x):
    return torch.nn.functional.gelu(x) * SCALE


def unused_helper(x):
    return x + 1


class Base(nn.Module):
    def __init__(self, width: int = HIDDEN):
        super().__init__()
        self.proj = nn.Linear(width, width)


class GeluBlock(Base):
    def forward(self, x: Annotated[torch.Tensor, (8, HIDDEN)]) -> torch.Tensor:
        return scaled_gelu(self.proj(x))


class Untyped(nn.Module):
    def forward(self, x):
        return x * 2


class NotAModule:
    def forward(self, x):
        return x
