# expect: fallback
# An error swallowed: the output buffer is returned whatever happened to the launch.
import torch
import torch.nn as nn


class ModelNew(nn.Module):
    def forward(self, x):
        y = torch.empty_like(x)
        try:
            launch(x, y)
        except:
            pass
        return y
