# expect: unwritten_output
# Builds the right tensor but never writes it into lathe's output: rebinding a name is not a write.
import torch


def launch(inputs, outputs, scalars):
    outputs[0] = torch.relu(inputs[0]) * scalars[0]
