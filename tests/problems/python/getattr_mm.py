# expect: forbidden
# On the gemm task, which allows no libraries, the product comes from torch under a name the
# source screen cannot read (issue 42, item 5): it got `ok` at 108.6x. The worker's observer sees
# aten::mm run.
import torch


def launch(inputs, outputs, scalars):
    product = getattr(torch, "m" + "m")
    product(inputs[0], inputs[1], out=outputs[0])
