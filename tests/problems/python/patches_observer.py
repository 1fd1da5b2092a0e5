# expect: forbidden
# On the gemm task, which allows no libraries, the product comes from torch, and the kernel first
# switches off lathe's observer of the torch operations it runs (python/lathe_ops.py) the way a
# determined user would: not through torch's private API, but by replacing the worker's own
# check, which lives in the same interpreter, from sys.modules.
import sys

import torch

for module in list(sys.modules.values()):
    observer = getattr(module, "Observer", None)
    if isinstance(observer, type) and hasattr(observer, "verify"):
        observer.verify = lambda self, *args, **kwargs: None


def launch(inputs, outputs, scalars):
    getattr(torch, "m" + "m")(inputs[0], inputs[1], out=outputs[0])  # past the source screen
