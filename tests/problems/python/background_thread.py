# expect: resource_limit
# Right answer, and a thread left spinning after the call: it would slow the baseline's runs.
import threading

import torch

_started = []


def _spin():
    while True:
        pass


def launch(inputs, outputs, scalars):
    if not _started:
        _started.append(threading.Thread(target=_spin, daemon=True))
        _started[0].start()
    torch.mul(torch.relu(inputs[0]), scalars[0], out=outputs[0])
