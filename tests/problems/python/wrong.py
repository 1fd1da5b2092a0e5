# expect: wrong_result
# Forgets alpha.
import torch


def launch(inputs, outputs, scalars):
    outputs[0].copy_(torch.relu(inputs[0]))
