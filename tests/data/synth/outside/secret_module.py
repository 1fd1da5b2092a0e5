# Outside the tree lathe synth is given: the test links to this file and its folder from inside
# the tree; lathe must not follow the links, so Outside never appears in the manifest.
from typing import Annotated

import torch
from torch import nn


class Outside(nn.Module):
    def forward(self, x: Annotated[torch.Tensor, (8,)]):
        return x + 1
