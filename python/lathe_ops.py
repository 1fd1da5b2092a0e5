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

Compute is every op not in PLUMBING below: allocation, views and reshapes, copies and dtype
moves, filling, concatenation and random initialisation (a layer's constructor draws its
weights) move or make data without doing the task's arithmetic, and the harness itself needs
them (the output copy, binding the Model's parameters). A `cat` or a copy cannot compute a gemm.

The candidate runs in the same interpreter, so the mode is something it could reach. The worker
checks before and after every call that the dispatch mode stack holds exactly this mode, and that
the log only grew (a candidate that pops the mode for good, pushes its own, or empties the log is
refused: `forbidden`); and its main loop, whose frame the candidate cannot change, checks before
every reply that nothing the observation goes through was rebound (the worker's check, this
module's functions, the recorder, the builtins: lathe_seal.py) and judges the log itself. What it
cannot see: a candidate that pops the mode and pushes it back within one call, edits the log's
entries in place, writes the interpreter's memory through ctypes, or runs ops under torch._C's
guards that exclude the Python dispatch key.
"""

# Base names (aten::<name>, any overload) of ops that move or make data without computing.
PLUMBING = frozenset("""
empty empty_like empty_strided new_empty new_empty_strided zeros zeros_like new_zeros ones
ones_like new_ones full full_like new_full scalar_tensor zero_ fill_ lift lift_fresh
lift_fresh_copy _to_copy to copy_ copy clone contiguous detach detach_ alias view _unsafe_view
view_as reshape _reshape_alias as_strided as_strided_ t transpose transpose_ permute expand
expand_as squeeze squeeze_ unsqueeze unsqueeze_ flatten unflatten slice select narrow split
split_with_sizes chunk unbind cat stack _local_scalar_dense item sym_size sym_stride sym_numel
sym_storage_offset size stride dim numel is_same_size is_contiguous resize_ resize_as_ set_
_resize_output_ random_ uniform_ normal_ bernoulli_ rand rand_like randn randn_like randint
randperm arange _pin_memory is_pinned record_stream _has_compatible_shallow_copy_type
_copy_from _copy_from_and_resize _nested_tensor_from_mask_left_aligned _assert_async
""".split())


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


def make_mode(torch):
    """(mode, log): a TorchDispatchMode that appends every op's base name to `log`."""
    from torch.utils._python_dispatch import TorchDispatchMode

    log = []

    class LatheOps(TorchDispatchMode):
        def __torch_dispatch__(self, func, types, args=(), kwargs=None):
            log.append(base_name(func))
            return func(*args, **(kwargs or {}))

    return LatheOps(), log


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
