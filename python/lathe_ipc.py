"""CUDA IPC for lathe's problem worker (python/lathe_problem.py; docs/problems.md, "CUDA IPC").

The problem's worker is the oracle: trusted, it holds the reference. A candidate's CUDA worker
(lathe-worker-cuda, untrusted) exports its device buffer with a CUDA IPC handle taken before any
kernel code ran; this module opens that handle, writes each trial's inputs straight into the
candidate's slot, keeps its own copy of the inputs and the float64 reference on the GPU, and after
the call compares the candidate's outputs there. Nothing goes the other way: the candidate never
gets a handle to this process's memory.

The comparison reproduces src/gate/check.cpp check_output (element-wise) and reports what
op::compare of a CUDA oracle reports (wire::output_stats), so that the gate judges both alike:
poison left where the reference is not NaN is unwritten; then non-finite outputs where the
reference is finite; then |got - want| > atol + rtol |want|, the normalized error and the relative
error over elements above a thousandth of the reference's RMS.
"""

import ctypes
import math

# src/core/poison.h: the patterns lathe-worker-cuda writes into outputs before every call.
POISON = {"float32": ("int32", 0x7fc0dead), "float64": ("int64", 0x7ff8deaddeaddead),
          "float16": ("int16", 0x7e5a), "bfloat16": ("int16", 0x7fda)}
POISON_BYTE = 0xA5

# The dtypes compared here (src/gate/problem_ipc.cpp sends only these); others stay on the host.
SIZES = {"float16": 2, "bfloat16": 2, "float32": 4, "float64": 8, "int8": 1, "int16": 2,
         "int32": 4, "int64": 8, "uint8": 1, "bool": 1}

CU_IPC_MEM_LAZY_ENABLE_PEER_ACCESS = 1


class IpcError(Exception):
    pass


class _Handle(ctypes.Structure):
    _fields_ = [("reserved", ctypes.c_char * 64)]


class _Driver:
    """The few driver calls IPC needs, from the libcuda.so.1 torch already uses."""

    def __init__(self):
        try:
            lib = ctypes.CDLL("libcuda.so.1")
        except OSError as e:
            raise IpcError(f"libcuda.so.1: {e}")
        self.lib = lib
        # cuda.h maps these names onto their _v2 entry points (64-bit sizes).
        self.open = lib.cuIpcOpenMemHandle_v2
        self.open.argtypes = [ctypes.POINTER(ctypes.c_uint64), _Handle, ctypes.c_uint]
        self.close = lib.cuIpcCloseMemHandle
        self.close.argtypes = [ctypes.c_uint64]
        self.range = lib.cuMemGetAddressRange_v2
        self.range.argtypes = [ctypes.POINTER(ctypes.c_uint64), ctypes.POINTER(ctypes.c_size_t),
                               ctypes.c_uint64]
        self.current = lib.cuCtxGetCurrent
        self.current.argtypes = [ctypes.POINTER(ctypes.c_void_p)]
        for f in (self.open, self.close, self.range, self.current):
            f.restype = ctypes.c_int

    def error(self, rc):
        name = ctypes.c_char_p()
        try:
            self.lib.cuGetErrorName(rc, ctypes.byref(name))
        except Exception:
            pass
        return name.value.decode() if name.value else f"CUresult {rc}"


class _Device:
    """A device pointer as an object torch.as_tensor views without copying."""

    def __init__(self, ptr, nbytes):
        self.__cuda_array_interface__ = {"shape": (nbytes,), "typestr": "|u1",
                                         "data": (ptr, False), "strides": None, "version": 2}


def _number(x):
    """JSON has no NaN or Inf: those travel as strings (src/gate/problem_ipc.cpp reads both)."""
    x = float(x)
    if x != x:
        return "nan"
    if x in (float("inf"), float("-inf")):
        return "inf" if x > 0 else "-inf"
    return x


class Peers:
    """Candidates' device buffers opened in this process, and what each slot was given."""

    def __init__(self, torch, device):
        self.torch = torch
        self.device = device
        self.driver = None
        self.peers = {}  # id -> {"ptr", "bytes", "view"}
        self.kept = {}   # (id, slot offset) -> {"inputs": [(offset, uint8 tensor)], "refs": [...]}
        self.next_id = 1

    def attach(self, handle_hex, nbytes):
        torch = self.torch
        handle = bytes.fromhex(handle_hex)
        if len(handle) != 64:
            raise IpcError("an IPC handle is 64 bytes")
        if nbytes <= 0:
            raise IpcError("an empty buffer")
        if self.driver is None:
            self.driver = _Driver()
        d = self.driver
        torch.empty(1, device=self.device)  # the runtime makes its primary context current
        ctx = ctypes.c_void_p()
        if d.current(ctypes.byref(ctx)) != 0 or not ctx.value:
            raise IpcError("no current CUDA context in the problem's worker")
        h = _Handle()
        ctypes.memmove(ctypes.addressof(h), handle, 64)
        ptr = ctypes.c_uint64()
        rc = d.open(ctypes.byref(ptr), h, CU_IPC_MEM_LAZY_ENABLE_PEER_ACCESS)
        if rc != 0:
            raise IpcError(f"cuIpcOpenMemHandle: {d.error(rc)}")
        # The handle came through the candidate's process: trust only an allocation that starts
        # at the pointer and is as large as the gate's layout says, so that no write lands
        # outside it (an illegal address would end this worker's context for every later trial).
        base, size = ctypes.c_uint64(), ctypes.c_size_t()
        rc = d.range(ctypes.byref(base), ctypes.byref(size), ptr.value)
        if rc != 0 or base.value != ptr.value or size.value < nbytes:
            d.close(ptr.value)
            raise IpcError(f"the shared buffer is not the {nbytes} bytes the layout needs "
                           f"(cuMemGetAddressRange: {d.error(rc) if rc else f'{size.value} bytes'})")
        view = torch.as_tensor(_Device(ptr.value, nbytes), device=self.device)
        if view.data_ptr() != ptr.value or view.numel() != nbytes:
            d.close(ptr.value)
            raise IpcError("torch did not view the shared buffer in place")
        peer = self.next_id
        self.next_id += 1
        self.peers[peer] = {"ptr": ptr.value, "bytes": nbytes, "view": view}
        return peer

    def detach(self, peer):
        p = self.peers.pop(peer, None)
        for key in [k for k in self.kept if k[0] == peer]:
            del self.kept[key]
        if p is None:
            return
        self.torch.cuda.synchronize()
        del p["view"]
        self.driver.close(p["ptr"])

    def _span(self, peer, offset, nbytes, what):
        p = self.peers.get(peer)
        if p is None:
            raise IpcError(f"peer {peer} is not attached")
        if offset < 0 or nbytes < 0 or offset + nbytes > p["bytes"]:
            raise IpcError(f"{what}: {nbytes} bytes at {offset} pass the shared buffer's end")
        return p["view"][offset:offset + nbytes]

    def write_inputs(self, peer, base, named, offsets, outputs):
        """Inputs (named, in ABI order) into the peer's slot at `base`; their bytes and the
        float64 reference outputs kept here for compare."""
        torch = self.torch
        kept_inputs = []
        for (name, t), off in zip(named, offsets):
            t = t.detach().to(self.device).contiguous().reshape(-1)
            raw = t.view(torch.uint8) if t.element_size() > 0 and t.numel() > 0 else None
            nbytes = t.numel() * t.element_size()
            dst = self._span(peer, base + int(off), nbytes, name)
            if raw is not None:
                dst.copy_(raw)
                kept_inputs.append((int(off), raw.clone()))
        refs = [t.detach().to(self.device).to(torch.float64).contiguous().reshape(-1)
                for _, t in outputs]
        self.kept[(peer, base)] = {"inputs": kept_inputs, "refs": refs}
        torch.cuda.synchronize()  # the inputs are in place before the gate runs the kernel

    def compare(self, peer, base, outputs):
        torch = self.torch
        torch.cuda.synchronize()
        kept = self.kept.get((peer, base))
        if kept is None:
            raise IpcError(f"nothing was written into slot {base} of peer {peer}")
        if len(outputs) != len(kept["refs"]):
            raise IpcError(f"{len(outputs)} outputs to compare, {len(kept['refs'])} references")
        differences = 0
        for off, want in kept["inputs"]:
            got = self._span(peer, base + off, want.numel(), "input")
            differences += int((got != want).sum().item())
        stats = [self._output(peer, base, o, ref) for o, ref in zip(outputs, kept["refs"])]
        return {"input_differences": differences, "outputs": stats}

    def _output(self, peer, base, o, ref):
        torch = self.torch
        dt = o["dtype"]
        if dt not in SIZES:
            raise IpcError(f"dtype {dt} is compared on the host")
        n = int(o["elements"])
        if n != ref.numel():
            raise IpcError(f"an output of {n} elements against a reference of {ref.numel()}")
        raw = self._span(peer, base + int(o["offset"]), n * SIZES[dt], "output")
        s = {"unwritten": 0, "mismatches": 0, "nonfinite": 0, "first_unwritten": 0, "first_bad": 0,
             "got": 0.0, "want": 0.0, "max_abs": 0.0, "max_rel": 0.0, "sum_d": 0.0, "sum_r": 0.0,
             "checksum": self._checksum(raw)}
        if n == 0:
            return s
        if dt in POISON:
            view, bits = POISON[dt]
            poisoned = raw.view(getattr(torch, view)) == bits
        else:
            poisoned = (raw.reshape(n, SIZES[dt]) == POISON_BYTE).all(dim=1)
        unwritten = poisoned & ~torch.isnan(ref)
        count = int(unwritten.sum().item())
        if count:
            s["unwritten"] = count
            s["first_unwritten"] = int(unwritten.nonzero()[0, 0].item())
            return s
        if dt == "bool":
            got = (raw != 0).to(torch.float64)
        else:
            got = raw.view(getattr(torch, dt)).to(torch.float64)
        ref_finite, got_finite = torch.isfinite(ref), torch.isfinite(got)
        both = ref_finite & got_finite
        finite_refs = ref[ref_finite]
        rms = math.sqrt(finite_refs.pow(2).sum().item() / finite_refs.numel()) if finite_refs.numel() else 0.0
        zero = torch.zeros((), dtype=torch.float64, device=got.device)
        d = torch.where(both, (got - ref).abs(), zero)
        w = torch.where(both, ref.abs(), zero)
        s["sum_d"] = _number(d.pow(2).sum().item())
        s["sum_r"] = _number(w.pow(2).sum().item())
        s["max_abs"] = _number(d.max().item())
        rel = both & (w > 1e-3 * rms)
        if bool(rel.any().item()):
            s["max_rel"] = _number((d[rel] / w[rel]).max().item())
        out_of_tol = both & (d > float(o["atol"]) + float(o["rtol"]) * w)
        nonfinite = ref_finite & ~got_finite
        special = ~ref_finite & torch.where(torch.isnan(ref), ~torch.isnan(got), got != ref)
        bad = out_of_tol | nonfinite | special
        s["nonfinite"] = int(nonfinite.sum().item())
        s["mismatches"] = int(bad.sum().item())
        if s["mismatches"]:
            i = int(bad.nonzero()[0, 0].item())
            s["first_bad"] = i
            s["got"] = _number(got[i].item())
            s["want"] = _number(ref[i].item())
        return s

    def _checksum(self, raw):
        """A 64-bit hash of the output's bytes, for the cached-result check (outputs identical
        to the previous trial's for different inputs). Wrapping int64 arithmetic on the device."""
        torch = self.torch
        if raw.numel() == 0:
            return 0
        idx = torch.arange(raw.numel(), dtype=torch.int64, device=raw.device)
        weights = idx * 0x2545F4914F6CDD1D + 0x3C6EF372FE94F82B
        h = int(((raw.to(torch.int64) + 1) * weights).sum().item())
        return h & 0xFFFFFFFFFFFFFFFF
