"""What lathe's Python worker relies on to observe a candidate, sealed before the candidate runs
(issue 42: the library policy decided by what runs, and by nothing the candidate can switch off).

The observer of the torch operations a candidate runs (lathe_ops.py) lives in the candidate's
own interpreter, and so does the code that judges it. A kernel that replaced the worker's check
from sys.modules before its first call (`Observer.verify = lambda *a, **k: None`: no private API,
plain Python) ran aten::mm on the no-library gemm task and got `ok`
(tests/problems/python/patches_observer.py). So the worker's main loop, whose frame is running
before the candidate exists and whose code no one can change while it runs, takes a snapshot of
every binding the observation goes through — the builtins, the worker's modules and classes,
torch's dispatch-mode functions, the observer and its recorder — before the candidate's code is
imported, and checks it before every reply with `broken`, which reads the snapshot through no
global name and no builtin. A binding rebound, a function's code or defaults or closure swapped,
or the policy's sets edited: the reply is `forbidden`.

What this does not stop (said in python/lathe_ops.py too): a candidate that writes the
interpreter's memory through ctypes, that edits the log's entries in place, or that uses
torch._C's guards excluding the Python dispatch key. A trusted reader of an append-only record
outside the worker (lathe itself) is the next step.
"""

import types

_FUNCTION = types.FunctionType


def _entry(label, mapping, key):
    value = mapping[key]
    code = defaults = kwdefaults = cells = None
    if isinstance(value, _FUNCTION):
        code, defaults, kwdefaults = value.__code__, value.__defaults__, value.__kwdefaults__
        if value.__closure__:
            cells = tuple(c.cell_contents for c in value.__closure__)
    frozen = frozenset(value) if isinstance(value, (set, frozenset)) else None
    return (label + "." + str(key), mapping, key, value, code, defaults, kwdefaults, cells, frozen)


def snapshot(namespaces, keys=None):
    """A tuple of entries: for each (label, mapping) every key (or only `keys[label]`), its value,
    and for a function its code, defaults and closure; for a set a frozen copy."""
    out = []
    for label, mapping in namespaces:
        wanted = (keys or {}).get(label)
        for key in list(mapping.keys()):
            if wanted is not None and key not in wanted:
                continue
            if isinstance(key, str) and key.startswith("__") and key.endswith("__") and key not in (
                    "__torch_dispatch__", "__init__", "__call__", "__enter__", "__exit__"):
                continue  # a module's or class's own dunders (__doc__, __dict__, __weakref__…)
            out.append(_entry(label, mapping, key))
    return tuple(out)


def broken(snap):
    """None, or the label of the first binding that changed. Uses no global name and no builtin:
    attribute reads, `is`, `!=` on sets and iteration over tuples only."""
    for label, mapping, key, value, code, defaults, kwdefaults, cells, frozen in snap:
        if mapping.get(key, snap) is not value:
            return label
        if code is not None:
            if value.__code__ is not code or value.__defaults__ is not defaults:
                return label
            if value.__kwdefaults__ is not kwdefaults:
                return label
            if cells is not None:
                now = value.__closure__
                if now is None:
                    return label
                i = 0
                for cell in now:
                    if cell.cell_contents is not cells[i]:
                        return label
                    i = i + 1
        if frozen is not None and value != frozen:
            return label
    return None
