"""The torch operations a Python candidate runs, observed while it runs (issue 42, items 5 and 6).

lathe's source screen (lathe_screen.py) reads names: `getattr(torch, "mm")`, `torch.ops.aten.mm`,
or a fallback to the reference's ops inside a helper function or under `contextlib.suppress`
passed it (a no-library gemm task gave such a kernel `ok` at 108.6x). What runs is seen here: a
TorchDispatchMode, pushed by the worker before the candidate's module is imported, records every
aten operation that reaches the dispatcher from then on — from Python under any name, from a C++
extension calling at::mm, from a layer — and the worker refuses the candidate (`forbidden`, the
op named) when its policy says so:

  forbid     a task that does not allow libraries: no torch compute at all, from the import on
  fallback   --refuse-torch-fallback on a ModelNew: none of the compute ops the reference's
             Model.forward runs (recorded the same way by the trusted problem worker), wherever
             the candidate's code calls them

Compute is every op not in PLUMBING (lathe_plumbing.txt): allocation, views and reshapes, copies and dtype
moves, filling, concatenation and random initialisation (a layer's constructor draws its
weights) move or make data without doing the task's arithmetic, and the harness itself needs
them (the output copy, binding the Model's parameters). A `cat` or a copy cannot compute a gemm.

The candidate runs in the same interpreter, so the mode is something it could reach. The worker
checks before and after every call that the dispatch mode stack holds exactly this mode, and that
the log only grew (a candidate that pops the mode for good, pushes its own, or empties the log is
refused: `forbidden`); and its main loop, whose frame the candidate cannot change, checks before
every reply that nothing the observation goes through was rebound (the worker's check, this
module's functions, the recorder, the builtins: lathe_seal.py) and judges the log itself. lathe
judges by what it reads from the record pipe, whose only read end lathe holds (the log's entries
edited in place, or the record fd closed or replaced, which the seccomp filter forbids, change
nothing there). Where lathe was built against this torch, the record is written from torch's
dispatcher instead and no mode is pushed (install_hook: liblathe-torch-hook.so's RecordFunction callback, installed
before the candidate exists, with torch's switches for such callbacks removed), which also sees a
candidate that pops the mode and pushes it back within one call or runs ops under torch._C's
guards that exclude the Python dispatch key. What neither sees: code that never enters the
dispatcher (an extension's direct at::cpu:: calls, a library through ctypes) and writes to the
interpreter's memory through ctypes.
"""

# Base names (aten::<name>, any overload) of ops that move or make data without computing: one list
# beside this file, which lathe reads too (src/gate/cpu/op_record.cpp judges the record below).
def _plumbing():
    import os
    with open(os.path.join(os.path.dirname(os.path.abspath(__file__)), "lathe_plumbing.txt")) as f:
        return frozenset(w for line in f for w in line.split("#", 1)[0].split())


PLUMBING = _plumbing()


def base_name(func):
    """'mm' for aten.mm.default (any overload), '' for ops outside aten."""
    name = getattr(func, "__name__", "") or str(func)      # 'mm.default'
    ns = getattr(getattr(func, "overloadpacket", None), "__module__", "") or ""
    qual = str(getattr(func, "_schema", "") or "")
    if qual and not qual.startswith("aten::") and "aten" not in ns:
        return "::" + qual.split("(")[0]                 # another namespace: kept whole
    return name.split(".")[0]


def is_compute(name):
    return bool(name) and name not in PLUMBING


# One record per op on the record pipe: RECORD_START, the base name, "\n", in one write (shorter
# than PIPE_BUF, so never interleaved with another thread's). lathe refuses a record it cannot
# parse: nothing else writes there but a candidate forging or hiding a name.
RECORD_START = b"\x1e"
RECORD_NAME_BYTES = 200


def make_mode(torch, record_fd=None):
    """(mode, log): a TorchDispatchMode that appends every op's base name to `log` and, with
    `record_fd`, writes each compute op's to lathe's record pipe before the op runs (the Python worker: lathe
    holds the only read end and judges what it reads, src/gate/cpu/op_record.h). The log is the
    worker's own view, which the candidate can reach; the record is not."""
    from torch.utils._python_dispatch import TorchDispatchMode

    log = []
    write, start, end, cap = __import__("os").write, RECORD_START, b"\n", RECORD_NAME_BYTES
    plumbing = PLUMBING  # never judged: not written (a write costs ~6 us an op on the 2-core VM)

    class LatheOps(TorchDispatchMode):
        def __torch_dispatch__(self, func, types, args=(), kwargs=None):
            name = base_name(func)
            log.append(name)
            if record_fd is not None and name and name not in plumbing:
                write(record_fd, start + name.encode("utf-8", "replace")[:cap] + end)
            return func(*args, **(kwargs or {}))

    return LatheOps(), log


# torch's Python switches that turn RecordFunction callbacks off or clear them (thread-local record
# functions off, every callback cleared, a test observer): the worker removes them from the
# interpreter before the candidate's code exists, once lathe's hook below Python is installed.
RECORD_FUNCTION_SWITCHES = ("_enable_record_function", "_clear_callbacks", "_set_empty_test_observer")


def install_hook(torch, lib, record_fd):
    """liblathe-torch-hook.so (src/worker/torch_op_hook.cpp, loaded by the worker with ctypes):
    a callback in torch's dispatcher that writes every compute op to lathe's record pipe, whatever
    the candidate does to dispatch modes; then the switches that could turn it off removed from
    every namespace that holds them. None, or why not (the worker refuses to run the candidate)."""
    import ctypes
    import gc
    import sys

    lib.lathe_torch_hook_version.restype = ctypes.c_char_p
    built = lib.lathe_torch_hook_version().decode()
    if built != torch.__version__:
        return (f"liblathe-torch-hook.so was built against torch {built}, and this interpreter has torch "
                f"{torch.__version__}: rebuild lathe with this interpreter's torch (cmake -DLATHE_TORCH_PYTHON=...)")
    err = ctypes.create_string_buffer(256)
    lib.lathe_torch_hook_install.argtypes = [ctypes.c_int, ctypes.c_char_p, ctypes.c_char_p, ctypes.c_size_t]
    if lib.lathe_torch_hook_install(record_fd, " ".join(sorted(PLUMBING)).encode(), err, len(err)) != 0:
        return "the torch op hook cannot be installed: " + err.value.decode(errors="replace")
    for name in RECORD_FUNCTION_SWITCHES:
        switch = getattr(torch._C._autograd, name, None)
        if switch is None:
            continue
        for holder in gc.get_referrers(switch):
            if isinstance(holder, dict):
                for key in [k for k, v in holder.items() if v is switch]:
                    del holder[key]
        if sys.getrefcount(switch) > 2:  # this name and getrefcount's argument
            return f"torch._C._autograd.{name} is still reachable after lathe removed it"
    return None


def push(torch, mode):
    """The mode installed beneath everything the candidate will run (torch 1.13 and 2)."""
    from torch.utils._python_dispatch import _push_mode
    _push_mode(mode)
    return current_modes(torch)


def current_modes(torch):
    """The dispatch mode stack now, bottom first (identities are compared, never called)."""
    from torch.utils._python_dispatch import _get_current_dispatch_mode_stack
    return list(_get_current_dispatch_mode_stack())


def record_ops(torch, run):
    """The compute ops `run()` executes (the trusted problem worker: the reference's ops)."""
    mode, log = make_mode(torch)
    with mode:
        run()
    return sorted({n for n in log if is_compute(n)})
