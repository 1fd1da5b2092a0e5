# expect: cached_output
# Computes once and replays its first answer for every later input.
import torch

_first = None


def launch(inputs, outputs, scalars):
    global _first
    if _first is None:
        _first = torch.relu(inputs[0]) * scalars[0]
    outputs[0].copy_(_first)
