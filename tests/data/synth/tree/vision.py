# A fixture for lathe synth: Boxes needs torchvision (refused with the reason); Flip, in the same
# file, needs only torch and is kept.
from typing import Annotated

import torch
from torch import nn
from torchvision.ops import nms


class Boxes(nn.Module):
    def forward(self, boxes: Annotated[torch.Tensor, (16, 4)], scores: Annotated[torch.Tensor, (16,)]):
        return nms(boxes, scores, 0.5)


class Flip(nn.Module):
    def forward(self, x: Annotated[torch.Tensor, (4, 32)]):
        return torch.flip(x, dims=[1])
