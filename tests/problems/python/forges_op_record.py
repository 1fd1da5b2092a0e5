# expect: forbidden
# On the gemm task, which allows no libraries, the kernel writes to lathe's record of its torch
# operations itself (fd 9, python/lathe_ops.py) before computing the product with torch, so that
# its byte and the observer's next record read as one name lathe does not refuse ("xmm"), and it
# rewrites the worker's own log as edits_op_log.py does. Nothing but lathe's observer writes to
# the record: a byte outside a record is refused as tampering.
import gc
import os

import torch

logs = [o.log for o in gc.get_objects() if type(o).__name__ == "Observer" and hasattr(o, "log")]


def launch(inputs, outputs, scalars):
    start = [len(log) for log in logs]
    os.write(9, b"x")
    getattr(torch, "m" + "m")(inputs[0], inputs[1], out=outputs[0])  # past the source screen
    for log, first in zip(logs, start):
        for i in range(first, len(log)):
            log[i] = "view"
