# expect: wrong_result
# A ModelNew that returns its result in host memory: the Model's output is a CUDA tensor, and
# lathe copies only a tensor on the output's device (python/lathe_modelnew.py own).
import torch
import torch.nn as nn


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        return (x * torch.sigmoid(x)).cpu()
