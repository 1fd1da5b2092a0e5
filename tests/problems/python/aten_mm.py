# expect: forbidden
# On the gemm task, which allows no libraries, the product comes from torch.ops.aten, which the
# source screen passed (issue 42, item 5). The worker's observer sees aten::mm run.
import torch


def launch(inputs, outputs, scalars):
    torch.ops.aten.mm.out(inputs[0], inputs[1], out=outputs[0])
