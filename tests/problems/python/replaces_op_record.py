# expect: forbidden
# On the gemm task, which allows no libraries, the kernel points the descriptor of lathe's record of
# its torch operations (fd 9, python/lathe_ops.py) at /dev/null, so that the observer's writes
# succeed and lathe reads nothing, computes the product with torch, and rewrites the worker's own
# log as edits_op_log.py does. The worker's seccomp filter keeps that descriptor in place
# (worker/seccomp.h): the dup2 kills the worker.
import gc
import os

import torch

logs = [o.log for o in gc.get_objects() if type(o).__name__ == "Observer" and hasattr(o, "log")]


def launch(inputs, outputs, scalars):
    start = [len(log) for log in logs]
    null = os.open("/dev/null", os.O_RDONLY)
    os.dup2(null, 9)
    getattr(torch, "m" + "m")(inputs[0], inputs[1], out=outputs[0])  # past the source screen
    for log, first in zip(logs, start):
        for i in range(first, len(log)):
            log[i] = "view"
