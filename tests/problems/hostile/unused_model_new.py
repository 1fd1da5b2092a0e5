# expect: ok
# A launch() kernel on a task that is no KernelBench problem, with one unused `class ModelNew`
# line: that line switched on the record step, which runs the file's code at build time (this
# print is its trace in the build log). No record step may run for it (issue 42).
import torch

print("lathe-test: imported at build time")


class ModelNew:
    pass


def launch(inputs, outputs, scalars):
    torch.mul(torch.relu(inputs[0]), scalars[0], out=outputs[0])
