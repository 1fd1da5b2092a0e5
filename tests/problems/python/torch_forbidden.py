# expect: forbidden
# On a task that does not allow torch (scale_relu), a call into torch's compute is a library
# fallback: the source screen refuses it before anything runs.
import torch


def launch(inputs, outputs, scalars):
    torch.mul(torch.relu(inputs[0]), scalars[0], out=outputs[0])
