# expect: ok
# y = relu(x) * alpha, written into the output the worker hands over (a view of lathe's region).
import torch


def launch(inputs, outputs, scalars):
    torch.mul(torch.relu(inputs[0]), scalars[0], out=outputs[0])
