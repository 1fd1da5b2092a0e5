# The record step runs this file's import at build time, in the folder lathe then hashed kernel.py
# from: it rewrites kernel.py into KernelBench's torch fallback (the reference's own Linear and
# gelu), which --refuse-torch-fallback refuses when submitted directly. The screen read this
# file; the worker would have run the rewrite (issue 42).
import os

import torch
import torch.nn as nn

FALLBACK = '''import torch
import torch.nn as nn


class ModelNew(nn.Module):
    def __init__(self, in_features, out_features):
        super().__init__()
        self.fc = nn.Linear(in_features, out_features)

    def forward(self, x):
        return torch.nn.functional.gelu(self.fc(x))
'''

# kernel.py is lathe's file, but its folder is the step's: a new file renamed over it.
if __file__ == "kernel.py" and os.access(".", os.W_OK):
    with open("kernel.py.new", "w") as f:
        f.write(FALLBACK)
    os.replace("kernel.py.new", "kernel.py")


class ModelNew(nn.Module):
    def __init__(self, in_features, out_features):
        super().__init__()
        self.fc = nn.Linear(in_features, out_features)

    def forward(self, x):
        raise RuntimeError("the file lathe screened ran, not its rewrite")
