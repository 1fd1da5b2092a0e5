# expect: forbidden
# On the gemm task, which allows no libraries, the product comes from torch inside one call
# during which the kernel has taken lathe's observer off torch's dispatch mode stack; it puts the
# observer back before returning, so the stack the worker checks after the call is the one it
# installed, and the observer's log never saw the op. Only a hook below Python (a dispatcher-level
# callback, src/worker/torch_op_hook.cpp) sees aten::mm.
import torch
from torch.utils._python_dispatch import _get_current_dispatch_mode, _pop_mode_temporarily


def launch(inputs, outputs, scalars):
    if _get_current_dispatch_mode() is None:  # lathe observes from below Python: nothing to pop
        getattr(torch, "m" + "m")(inputs[0], inputs[1], out=outputs[0])  # past the source screen
        return
    with _pop_mode_temporarily():
        getattr(torch, "m" + "m")(inputs[0], inputs[1], out=outputs[0])
