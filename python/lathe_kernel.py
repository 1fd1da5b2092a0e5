"""lathe's Python kernel worker: runs one untrusted Python kernel for lathe (docs/python-kernels.md).

The Python counterpart of lathe-worker (src/worker/main.cpp), speaking the same protocol
(src/gate/cpu/wire.h, mirrored in lathe_wire.py) over the same descriptors: 3 = the shared
region, 4 = commands, 5 = replies, 6 = the kernel's source (read-only). lathe starts it as it
starts lathe-worker (a user of its own when root, rlimits, a private /proc, the death signal) and
the gate treats it as any worker: checks, the timing arena, the A/A control, the host-time
cross-check and every failure's outcome are the same.

A kernel is a Python file that defines

    def launch(inputs, outputs, scalars): ...   # torch tensors, views of the shared region

inputs and outputs in the task's ABI order (CPU, contiguous, in the task's dtypes), scalars a
list of floats; optional `init()`. It writes its results into `outputs` (out=, copy_, slicing);
a non-zero return or an exception is a launch error.

Or, on a KernelBench problem, a file that defines `class ModelNew` (KernelBench's candidates):
constructed once at load with the problem's init arguments (--model: python/lathe_problem.py's
model_spec), its parameters and buffers bound by name to the Model's state_dict tensors that
follow the inputs, called with forward's arguments, its outputs checked for count, shape and
dtype and copied into the outputs. Its load_inline extensions were built by lathe before it runs
(python/lathe_ext.py, --extensions); it can build none here.

Isolation: torch is imported first (the kernel may use it); then, before the kernel's own code
runs, the file system is confined (Landlock: read-only system trees, nothing written) and lathe's
seccomp filter is installed, through liblathe-confine.so (the same code as lathe-worker's). A
kernel never sees lathe's environment beyond the worker's allow-list.
"""

import ctypes
import json
import mmap
import os
import sys
import traceback

import lathe_cuda
import lathe_ext
import lathe_modelnew
import lathe_ops
import lathe_seal
import lathe_wire as W
from lathe_modelnew import ModelNewLaunch, OutputMismatch, Refused

# lathe::dtype (src/core/dtype.h) -> torch dtype name
DTYPES = ["float16", "bfloat16", "float32", "float64", "int8", "int16", "int32", "int64", "uint8",
          None, None, None, "bool"]


def interpreter_trees(torch):
    """The interpreter's own trees outside the system's (a virtual environment under /opt, a
    site-packages elsewhere): torch imports modules lazily, so they stay readable."""
    system = ("/usr/", "/lib/", "/lib64/")
    out = []
    for d in (sys.prefix, sys.base_prefix, os.path.dirname(os.path.dirname(torch.__file__))):
        d = os.path.realpath(d)
        if os.path.isdir(d) and not (d + "/").startswith(system) and d not in out:
            out.append(d)
    return out


def cpu_capability(torch):
    """The vector instructions torch's CPU kernels use here ('AVX2', 'AVX512', 'NO AVX'), chosen
    now, before the confinement. torch chooses them once, at its first vectorized op, through
    cpuinfo, which reads /proc/cpuinfo and /sys/devices/system/cpu: after Landlock those are
    unreadable, cpuinfo fails ("Error in cpuinfo: failed to parse processor information") and
    torch falls back to its scalar kernels. Until 2026-12-07 every Python worker did so: eager
    PyTorch, the baseline of every ModelNew, ran without AVX inside the gate (Swish 16 x 16384,
    ~0.5 ms a call against ~0.2 ms with AVX2), and candidates were timed against that."""
    get = getattr(getattr(torch.backends, "cpu", None), "get_cpu_capability", None)
    if get is not None:
        return str(get())
    for line in torch.__config__.show().splitlines():  # torch 1.x: the same choice, as text
        if "CPU capability usage:" in line:
            return line.split(":", 1)[1].strip()
    return "unknown"


class Observer:
    """The torch ops the candidate runs (lathe_ops.py), judged by the worker's policy
    (--torch-compute forbid|fallback). Installed before the candidate's code is imported."""

    def __init__(self, torch, policy, spec, record_fd=None):
        self.policy = policy
        self.refused = set(spec.get("ops", [])) if spec else set()
        if policy == "fallback" and not self.refused:
            self.policy = None  # a reference that computes nothing with torch has no fallback
        self.mode, self.log = lathe_ops.make_mode(torch, record_fd)
        self.stack = lathe_ops.push(torch, self.mode)
        self.torch = torch
        self.seen = 0

    def verify(self, where, judge=True):
        """None, or why the candidate is refused: the mode stack or the log tampered with, or
        an op the policy forbids in what it ran since the last look."""
        stack = lathe_ops.current_modes(self.torch)
        if len(stack) != len(self.stack) or any(a is not b for a, b in zip(stack, self.stack)):
            return (f"the candidate changed torch's dispatch mode stack ({where}): lathe observes the "
                    "torch operations a candidate runs, and that observer must stay installed")
        if len(self.log) < self.seen:
            return f"the candidate tampered with lathe's record of its torch operations ({where})"
        new, self.seen = self.log[self.seen:], len(self.log)
        if not judge or not self.policy:
            return None
        for name in new:
            if not lathe_ops.is_compute(name):
                continue
            if self.policy == "forbid":
                return (f"torch compute on a task that allows no libraries: aten::{name} ran ({where}); "
                        "a Python kernel here computes with its own code (an extension, Triton)")
            if name in self.refused:
                return (f"torch fallback: aten::{name} ran in ModelNew ({where}), an op the reference's "
                        "Model runs (KernelBench's torch fallback, refused with --refuse-torch-fallback)")
        return None


class Host:
    def __init__(self, region, size, confine_lib, seccomp, model=None, extensions=None, policy=None,
                 record=False, hook=None, device=None):
        self.region, self.size = region, size
        self.device = device    # --device cuda: the slots live on the GPU (lathe_cuda.py)
        self.cuda = None        # its lathe_cuda.Device, made at load before the confinement
        self.hook = hook        # --op-hook: liblathe-torch-hook.so, the record written from torch's dispatcher
        self.policy = policy    # --torch-compute: forbid | fallback (lathe_ops.py), or None
        self.record = record    # --op-record: the observer also writes lathe's record pipe (fd 9)
        self.observer = None
        self.confine_lib, self.seccomp = confine_lib, seccomp
        self.model_file, self.extensions_file = model, extensions
        self.launch = None
        self.layout = None
        self.slots = []      # per slot: (inputs, outputs) lists of tensors
        self.scalars = []
        self.torch = None
        self.confined = ""
        self.pending = None  # (source, spec) between the two halves of a load

    def reply(self, st=W.OK, code=0, message=""):
        r = W.Reply()
        r.magic = W.MAGIC
        r.st = st
        r.code = code
        r.message = message.encode("utf-8", "replace")[: W.MESSAGE_BYTES - 1]
        return r

    def failure(self, st, what, e):
        last = traceback.format_exception_only(type(e), e)[-1].strip()
        return self.reply(st, -1, f"{what}: {last}")

    # ---- load: torch, confinement, the kernel's code -------------------------------------
    def load(self, c):
        """The first half of a load: torch, the confinement and the observer, and the kernel's
        source read; None when the candidate may be imported (load_kernel), else the reply."""
        if self.launch is not None:
            return self.reply(W.BAD_COMMAND, 0, "the kernel is already loaded")
        try:
            source = b""
            while True:
                chunk = os.pread(W.OBJECT_FD, 1 << 20, len(source))
                if not chunk:
                    break
                source += chunk
            if self.device == "cuda":
                lathe_cuda.no_disk_caches()  # before torch and CUDA read them
            import torch  # trusted: loaded before any kernel code, while files may still be read
            self.torch = torch
            self.capability = cpu_capability(torch)
            spec, extensions = None, []
            if self.model_file:
                with open(self.model_file) as f:
                    spec = json.load(f)
            if self.extensions_file:
                with open(self.extensions_file) as f:
                    extensions = json.load(f)
            lathe_ext.install_loader(torch, extensions)
            import torch.utils._python_dispatch  # noqa: F401 - the observer's, before confinement
            # Taken before the candidate's code exists: what ModelNew's outputs are copied with,
            # and where lathe's shared region lies (a result inside it is refused).
            self.copy = torch.Tensor.copy_
            base = torch.frombuffer(self.region, dtype=torch.uint8, count=1).data_ptr() if self.size else 0
            self.region_span = (base, base + self.size)
        except BaseException as e:  # noqa: BLE001 - every failure is the worker's reply
            return self.failure(W.DLOPEN_FAILED, "python: cannot import torch", e)
        if self.device == "cuda" and self.cuda is None:
            try:  # the context and the slots' device buffer, before the confinement (lathe_cuda.py)
                self.cuda = lathe_cuda.Device(torch, self.size)
            except BaseException as e:  # noqa: BLE001
                return self.failure(W.DEVICE_ERROR, "no CUDA device for this torch", e)
        hook = None
        if self.record and self.hook:
            try:
                hook = ctypes.CDLL(self.hook)  # read before confinement; installed just before the candidate
            except OSError as e:
                return self.reply(W.INIT_FAILED, 0, f"python: cannot load {self.hook}: {e}")
        why = self.confine([e["dir"] for e in extensions] + interpreter_trees(torch))
        if why is not None:
            return self.reply(W.INIT_FAILED, 0, "sandbox not installed: " + why)
        self.confined += "; torch CPU kernels: " + self.capability
        if self.policy:
            # With the hook, lathe's record comes from torch's dispatcher and lathe judges it: no
            # dispatch mode in the candidate's interpreter (its cost, ~10 us an op, fell on the
            # candidate's timing; torch 2.11 imports its whole compiler stack, 883 modules, at a
            # mode's first op, which the confined worker cannot: killed by the seccomp filter on
            # the H100 machine). The mode is the observer only where the hook was not built.
            try:
                if hook is not None:
                    why = lathe_ops.install_hook(torch, hook, W.RECORD_FD)
                else:
                    self.observer = Observer(self.torch, self.policy, spec, W.RECORD_FD if self.record else None)
            except BaseException as e:  # noqa: BLE001
                return self.failure(W.INIT_FAILED, "python: lathe's torch observer cannot be installed", e)
            if why is not None:
                return self.reply(W.INIT_FAILED, 0, "python: " + why)
            self.confined += ("; torch ops: recorded from torch's dispatcher" if hook is not None else
                              "; torch ops: recorded by a dispatch mode only (no liblathe-torch-hook.so)"
                              if self.record else "")
        self.pending = (source, spec)
        return None

    def load_kernel(self):
        """The candidate's code imported, its launch (or ModelNew) and init found and run: the
        second half of a load, after main() sealed what the observation relies on."""
        source, spec = self.pending
        self.pending = None
        module = {"__name__": "lathe_kernel_candidate", "__file__": "kernel.py"}
        try:
            code = compile(source, "kernel.py", "exec")
            exec(code, module)  # noqa: S102 - the kernel is the worker's to run, confined
        except BaseException as e:  # noqa: BLE001
            return self.failure(W.DLOPEN_FAILED, "python: the kernel does not import", e)
        launch = module.get("launch")
        if launch is None and isinstance(module.get("ModelNew"), type):
            if spec is None:
                return self.reply(W.DLOPEN_FAILED, 0, "python: a ModelNew runs on a KernelBench problem "
                                  "(Model, get_inputs, get_init_inputs) as its task; this task is not one")
            try:
                launch = ModelNewLaunch(self.torch, module["ModelNew"], spec, self.region_span, self.copy,
                                        *((self.cuda.dev, self.cuda.span) if self.cuda else ()))
            except BaseException as e:  # noqa: BLE001
                return self.failure(W.DLOPEN_FAILED, "python: ModelNew cannot be constructed", e)
        if not callable(launch):
            return self.reply(W.DLOPEN_FAILED, 0,
                              "python: the kernel defines no launch(inputs, outputs, scalars)")
        init = module.get("init")
        if callable(init):
            try:
                rc = init()
            except BaseException as e:  # noqa: BLE001
                return self.failure(W.INIT_FAILED, "init", e)
            if rc not in (None, 0):
                return self.reply(W.INIT_FAILED, int(rc) if isinstance(rc, int) else -1,
                                  f"init returned {rc!r}")
        if self.observer is not None:
            # Import, construction and init: a no-library task allows no torch compute in any.
            why = self.observer.verify("while loading", judge=self.observer.policy == "forbid")
            if why:
                return self.reply(W.FORBIDDEN, 0, why)
        self.launch = launch
        return self.reply(W.OK, 0, "loaded; " + self.confined)

    def confine(self, read_dirs=()):
        """None when confined as far as this machine allows (said in `confined`), else why not."""
        if not self.confine_lib:
            self.confined = "files: not confined (no liblathe-confine.so)"
            return None if not self.seccomp else "no liblathe-confine.so to install the filter"
        try:
            lib = ctypes.CDLL(self.confine_lib)
        except OSError as e:
            return f"cannot load {self.confine_lib}: {e}"
        buf = ctypes.create_string_buffer(256)
        dirs = (ctypes.c_char_p * max(1, len(read_dirs)))(*[d.encode() for d in read_dirs])
        abi = lib.lathe_confine_python(W.OBJECT_FD, dirs, len(read_dirs), buf, len(buf))
        if abi < 0:
            return buf.value.decode(errors="replace")
        self.confined = (f"files: Landlock ABI {abi}" if abi > 0
                         else "files: not confined (" + buf.value.decode(errors="replace") + ")")
        if self.seccomp:
            # With a record pipe, the filter also keeps it in place: no close, dup2 or dup3 onto it.
            guarded = W.RECORD_FD if self.record else -1
            if lib.lathe_install_seccomp_guarding(guarded, buf, len(buf)) != 0:
                return buf.value.decode(errors="replace")
        return None

    # ---- setup: the slots' tensors -------------------------------------------------------
    def tensor(self, d, offset):
        torch = self.torch
        name = DTYPES[d.type] if d.type < len(DTYPES) else None
        if name is None:
            raise ValueError(f"dtype code {d.type} has no torch type")
        dt = getattr(torch, name)
        shape = [int(d.shape[i]) for i in range(d.ndim)]
        n = 1
        for s in shape:
            n *= s
        if self.cuda is not None:
            return self.cuda.view(dt, shape, offset, d.bytes)
        if n == 0:
            return torch.empty(shape, dtype=dt)
        return torch.frombuffer(self.region, dtype=dt, count=n, offset=offset).view(shape)

    def setup(self, c):
        self.slots = []
        if self.cuda is not None:
            self.cuda.reset()
        if self.launch is None:
            return self.reply(W.BAD_COMMAND, 0, "setup before a successful load")
        nt = c.num_inputs + c.num_outputs
        if (c.num_inputs > W.MAX_TENSORS or c.num_outputs > W.MAX_TENSORS or nt > W.MAX_TENSORS
                or c.num_scalars > W.MAX_SCALARS or c.num_slots == 0):
            return self.reply(W.BAD_COMMAND, 0, "setup: bad counts")
        for i in range(nt):
            d = c.tensors[i]
            end = d.offset + d.bytes + (c.num_slots - 1) * c.slot_stride
            if d.ndim > W.MAX_DIMS or end > self.size or (c.num_slots > 1 and d.offset + d.bytes > c.slot_stride):
                return self.reply(W.BAD_COMMAND, 0, f"setup: tensor {i} lies outside its slot or the region")
        if c.table_entries > 0:
            end = c.table_offset + c.table_entries * nt * 8
            if end > self.size or c.table_offset % 8:
                return self.reply(W.BAD_COMMAND, 0, "setup: the call table lies outside the region")
        self.populate(c)
        self.layout = W.Command.from_buffer_copy(c)
        try:
            for s in range(c.num_slots):
                base = s * c.slot_stride
                ts = [self.tensor(c.tensors[i], base + c.tensors[i].offset) for i in range(nt)]
                self.slots.append((ts[: c.num_inputs], ts[c.num_inputs:]))
        except BaseException as e:  # noqa: BLE001
            return self.failure(W.BAD_COMMAND, "setup", e)
        self.scalars = [float(c.scalars[i]) for i in range(c.num_scalars)]
        return self.reply(W.OK, 0, "ready")

    def populate(self, c):
        """The region's pages touched before the first timed call (as lathe-worker does)."""
        n = min(c.populate_bytes, self.size) // 4096 * 4096
        if n <= 0:
            return
        torch = self.torch
        whole = torch.frombuffer(self.region, dtype=torch.uint8, count=n)
        start = min((c.written_from + 4095) // 4096 * 4096, n)
        int(whole[0:start:4096].sum()) if start > 0 else 0
        if start < n:
            pages = whole[start:n:4096]
            pages.copy_(pages.clone())

    # ---- run -------------------------------------------------------------------------------
    def call(self, ins, outs):
        rc = self.launch(ins, outs, self.scalars)
        if rc not in (None, 0):
            raise RuntimeError(f"launch returned {rc!r}")

    def call_failure(self, e):
        if isinstance(e, Refused):
            return self.reply(W.FORBIDDEN, 0, str(e))
        if self.observer is not None:
            # A forbidden op first, then the exception it may have caused.
            why = self.observer.verify("while called")
            if why:
                return self.reply(W.FORBIDDEN, 0, why)
        if isinstance(e, OutputMismatch):
            return self.failure(W.WRONG_OUTPUT, "ModelNew's outputs", e)
        return self.failure(W.KERNEL_ERROR, "launch raised", e)

    def done(self, calls):
        """The reply to a run that returned: refused when the observer saw what the policy
        forbids, or saw itself removed, in any of its calls (once per request: the check reads
        the ops recorded since the last one)."""
        if self.observer is not None:
            why = self.observer.verify("while called")
            if why:
                r = self.reply(W.FORBIDDEN, 0, why)
                r.calls_done = 0
                return r
        r = self.reply(W.OK)
        r.calls_done = calls
        return r

    def run(self, c):
        if not self.slots:
            return self.reply(W.BAD_COMMAND, 0, "run before a successful setup")
        if c.rotate == 0 or c.rotate > len(self.slots):
            return self.reply(W.BAD_COMMAND, 0, f"run: rotate {c.rotate} outside 1..{len(self.slots)} slots")
        i = 0
        try:
            for i in range(c.calls):
                ins, outs = self.slots[(c.first_slot + i) % c.rotate]
                self.call(ins, outs)
        except BaseException as e:  # noqa: BLE001
            r = self.call_failure(e)
            r.calls_done = i
            return r
        return self.done(c.calls)

    def run_table(self, c):
        if not self.slots:
            return self.reply(W.BAD_COMMAND, 0, "run before a successful setup")
        L = self.layout
        if c.calls > L.table_entries:
            return self.reply(W.BAD_COMMAND, 0, f"run_table: {c.calls} calls, the table has {L.table_entries} entries")
        nt = L.num_inputs + L.num_outputs
        table = memoryview(self.region)[L.table_offset: L.table_offset + L.table_entries * nt * 8].cast("Q")
        i = 0
        try:
            for i in range(c.calls):
                # A call's tensors are made for it and dropped after it, never kept: views kept
                # across calls (a cache keyed by offset, as this loop had) were a small allocation
                # that outlived each call, placed by malloc among the candidate's temporaries; the
                # heap then fragmented, every eager call took a fresh MiB from the kernel (256 page
                # faults, 4-7 ms a call where the same process reusing its heap took 0.8 ms), and
                # which processes did so differed from one evaluation to the next
                # (bench/results/python-heap-2026-12-06.md). Fresh objects also leave a candidate
                # no identity to key a cache of its results on.
                ts = []
                for k in range(nt):
                    off = table[i * nt + k]
                    d = L.tensors[k]
                    if off % 256 or off > self.size or d.bytes > self.size - off:
                        r = self.reply(W.BAD_COMMAND, 0, f"run_table: entry {i}, tensor {k} outside the region")
                        r.calls_done = i
                        return r
                    ts.append(self.tensor(d, off))
                self.call(ts[: L.num_inputs], ts[L.num_inputs:])
                del ts
        except BaseException as e:  # noqa: BLE001
            r = self.call_failure(e)
            r.calls_done = i
            return r
        finally:
            table.release()
        return self.done(c.calls)

    def answer(self, c):
        if c.magic != W.MAGIC:
            return self.reply(W.BAD_COMMAND, 0, "bad command magic")
        k = c.kind
        if k == W.LOAD:
            return self.load(c) or self.load_kernel()
        if self.cuda is not None and k != W.SETUP:
            r = self.cuda.answer(self, c)
            if r is not None:
                return r
        if k == W.SETUP:
            return self.setup(c)
        if k == W.RUN:
            return self.run(c)
        if k == W.RUN_TABLE:
            return self.run_table(c)
        if k == W.QUIT:
            return self.reply()
        return self.reply(W.BAD_COMMAND, 0, "this worker runs Python kernels on the CPU only")


def read_command():
    size = ctypes.sizeof(W.Command)
    buf = b""
    while len(buf) < size:
        try:
            chunk = os.read(W.COMMAND_FD, size - len(buf))
        except InterruptedError:
            continue
        if not chunk:
            return None if not buf else False
        buf += chunk
    return W.Command.from_buffer_copy(buf)



def seal_of(host):
    """Everything the observation of the candidate goes through (lathe_seal.py), taken after the
    observer is installed and before the candidate's code exists."""
    import builtins
    torch = host.torch
    spaces = [("builtins", builtins.__dict__), ("lathe_kernel", globals()), ("lathe_ops", lathe_ops.__dict__),
              ("lathe_wire", W.__dict__), ("lathe_seal", lathe_seal.__dict__), ("os", os.__dict__),
              ("ctypes", ctypes.__dict__), ("Reply", W.Reply.__dict__), ("Command", W.Command.__dict__),
              ("lathe_modelnew", lathe_modelnew.__dict__), ("lathe_cuda", lathe_cuda.__dict__)]
    for module in (globals(), lathe_modelnew.__dict__, lathe_cuda.__dict__):
        for name, value in list(module.items()):
            if isinstance(value, type) and value.__module__ in (__name__, "lathe_modelnew", "lathe_cuda"):
                spaces.append((name, value.__dict__))
    keys = {"host": {"observer", "policy", "cuda"}}
    spaces.append(("host", host.__dict__))
    obs = host.observer
    if obs is not None:
        dispatch = sys.modules["torch.utils._python_dispatch"]
        # Its functions and classes (torch 2 keeps flags there that dispatch itself rebinds).
        spaces.append(("torch.utils._python_dispatch", dispatch.__dict__))
        keys["torch.utils._python_dispatch"] = {k for k, v in dispatch.__dict__.items() if callable(v)}
        spaces.append(("torch._C", torch._C.__dict__))
        keys["torch._C"] = {k for k, v in torch._C.__dict__.items()
                            if callable(v) and ("dispatch" in k.lower() or "mode" in k.lower())}
        spaces.append(("observer", obs.__dict__))
        keys["observer"] = set(obs.__dict__) - {"seen"}
        for cls in type(obs.mode).__mro__:
            if cls is not object:
                spaces.append((cls.__name__, cls.__dict__))
    return lathe_seal.snapshot(spaces, keys)


def main(argv):
    seccomp = "--no-seccomp" not in argv
    def value(flag):
        return argv[argv.index(flag) + 1] if flag in argv else None
    confine_lib = value("--confine")
    libc = ctypes.CDLL(None)
    libc.prctl(4, 0, 0, 0, 0)  # PR_SET_DUMPABLE 0: no other worker reads this one's memory
    size = os.fstat(W.REGION_FD).st_size
    region = mmap.mmap(W.REGION_FD, size) if size > 0 else None
    host = Host(region, size, confine_lib, seccomp, value("--model"), value("--extensions"),
                value("--torch-compute"), "--op-record" in argv, value("--op-hook"), value("--device"))
    # This frame runs before the candidate exists and its code cannot change while it runs: what
    # it needs after the candidate's import is held in its own locals, taken now (lathe_seal.py).
    broken, broken_code, length, write, to_bytes = lathe_seal.broken, lathe_seal.broken.__code__, len, os.write, bytes
    Reply, MAGIC, LOAD, QUIT, FORBIDDEN = W.Reply, W.MAGIC, W.LOAD, W.QUIT, W.FORBIDDEN
    message_bytes, reply_fd, read = W.MESSAGE_BYTES, W.REPLY_FD, read_command
    plumbing = lathe_ops.PLUMBING
    seal = log = policy = refused = None
    checked = 0
    while True:
        c = read()
        if c is None:
            return 0
        if c is False:
            return 2
        loading = c.magic == MAGIC and c.kind == LOAD
        if region is None:
            r = host.reply(W.BAD_COMMAND, 0, "no shared region on fd 3")
        else:
            try:
                if loading and seal is None:
                    r = host.load(c)
                    if r is None:
                        seal = seal_of(host)
                        obs = host.observer
                        if obs is not None:
                            log, policy, refused = obs.log, obs.policy, frozenset(obs.refused)
                        r = host.load_kernel()
                else:
                    r = host.answer(c)
            except BaseException as e:  # noqa: BLE001
                r = host.failure(W.BAD_COMMAND, "the worker failed", e)
        why = None
        if seal is not None:
            why = "lathe_seal.broken" if broken.__code__ is not broken_code else broken(seal)
            if why is not None:
                why = ("the candidate changed lathe's worker (" + why + "): lathe observes the torch "
                       "operations a candidate runs, and nothing it relies on may be replaced")
            elif log is not None:
                n = length(log)
                if n < checked:
                    why = "the candidate tampered with lathe's record of its torch operations"
                elif policy is not None and (policy == "forbid" or not loading):
                    for name in log[checked:n]:
                        if name and name not in plumbing and (policy == "forbid" or name in refused):
                            why = ("torch compute the task's policy refuses: aten::" + name + " ran "
                                   "(seen by the worker's main loop)")
                            break
                checked = n
        if why is not None and r.st != FORBIDDEN:
            r = Reply()
            r.magic = MAGIC
            r.st = FORBIDDEN
            r.code = 0
            r.calls_done = 0
            r.message = why.encode("utf-8", "replace")[: message_bytes - 1]
        data = to_bytes(r)
        done = 0
        while done < length(data):
            done += write(reply_fd, data[done:])
        if c.magic == MAGIC and c.kind == QUIT:
            return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
