# expect: forbidden
# On the gemm task, which allows no libraries, the product comes from torch after the kernel has
# switched off what could observe it from below Python: record functions off for this thread,
# every RecordFunction callback cleared (torch's own profiler switches), and lathe's dispatch mode
# popped for the length of the call. lathe removes those switches from the interpreter before the
# candidate's code exists (python/lathe_kernel.py): here they are gone, and the op is recorded.
import torch
from torch.utils._python_dispatch import _get_current_dispatch_mode, _pop_mode_temporarily

autograd = torch._C._autograd
for name, arg in (("_enable_record_function", (False,)), ("_clear_callbacks", ())):
    switch = getattr(autograd, name, None) or getattr(torch.autograd, name, None)
    if switch is not None:
        switch(*arg)


def launch(inputs, outputs, scalars):
    if _get_current_dispatch_mode() is None:  # lathe observes from below Python: nothing to pop
        getattr(torch, "m" + "m")(inputs[0], inputs[1], out=outputs[0])  # past the source screen
        return
    with _pop_mode_temporarily():
        getattr(torch, "m" + "m")(inputs[0], inputs[1], out=outputs[0])
