# KernelBench format: torch.topk's (values, indices) compared as comparison kind "topk"
# (LATHE_COMPARISON): values per row as multisets, indices checked against the input. Integer
# inputs on 41 levels make every row full of ties, at the k-th value too, so a candidate whose
# indices differ from torch's (a different tie-breaking) must still pass.
import torch
import torch.nn as nn

LATHE_COMPARISON = "topk"
LATHE_TOLERANCE = {"rtol": 0.0, "atol": 0.0, "nerr": 0.0}


class Model(nn.Module):
    def __init__(self, k):
        super().__init__()
        self.k = k

    def forward(self, x):
        return torch.topk(x, self.k, dim=-1, sorted=False)


def get_inputs():
    return [torch.randint(-20, 21, (64, 300)).float()]


def get_init_inputs():
    return [37]
