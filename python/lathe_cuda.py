"""The Python kernel worker's device side on CUDA tasks (docs/python-kernels.md, "On CUDA").

lathe-worker-cuda's protocol (src/worker/device_host.cpp) for Python kernels and ModelNew
candidates: the slots live in one device buffer laid out like the shared region (the "mirror",
reserved at load, before the confinement and before any of the candidate's code), so that slot s
of the region and of the device share offsets and a transfer is one copy. lathe stages a trial's
inputs in the region and asks for an upload; the candidate runs on the device tensors; its
outputs come back by a download, outside the clock, and lathe checks them against the fp64
reference on the host. CUDA IPC (the problem's worker writing the candidate's device memory
directly) is not spoken here yet: every trial goes through host memory.

Timed runs are timed by lathe's own clock around the request; the events recorded here around
the calls are the cross-check (reply.device_seconds), as in lathe-worker-cuda. With `graph`, the
calls of a block are captured once into a CUDA graph and replayed; a candidate that cannot be
captured (it synchronizes, or launches on the legacy default stream while torch captures on a
side stream) is timed by events from then on, and the reply says which was used.
"""

import lathe_wire as W

# core/poison.h: the bit patterns written into outputs before a call; an element that still
# holds its pattern afterwards was never written. Floating outputs: a quiet NaN with a payload
# no arithmetic produces, as an integer of the same width; every other dtype: 0xA5 bytes.
POISON = {"float32": ("int32", 0x7FC0DEAD), "float64": ("int64", 0x7FF8DEADDEADDEAD),
          "float16": ("int16", 0x7E5A), "bfloat16": ("int16", 0x7FDA)}
POISON_BYTE = 0xA5


def no_disk_caches():
    """The worker writes no file (its seccomp filter kills a process that creates one): torch's
    jiterator would cache the kernels it compiles under ~/.cache/torch/kernels, the driver a PTX
    JIT under ~/.nv/ComputeCache. Both read their switch from the environment when first used."""
    import os
    os.environ["USE_PYTORCH_KERNEL_CACHE"] = "0"
    os.environ["CUDA_CACHE_DISABLE"] = "1"


def window_shift(slack, window):
    """wire.h window_shift: where window `window` of an input with `slack` bytes of slack starts."""
    return 256 * (window % (slack // 256 + 1))


def is_device_error(e):
    """A CUDA error (the context may be gone with it), not the candidate's Python failing."""
    text = str(e)
    return type(e).__name__ in ("AcceleratorError", "CudaError") or text.startswith("CUDA error") \
        or "CUDA error:" in text


class Device:
    """The mirror of the region on the device, the events, and the graph of the last block."""

    def __init__(self, torch, size):
        # Before the confinement: creating the context opens /dev/nvidia* read-write, which the
        # seccomp filter forbids afterwards (as lathe-worker-cuda does, worker/main.cpp).
        self.torch = torch
        torch.cuda.init()
        self.dev = torch.device("cuda", torch.cuda.current_device())
        self.mirror = torch.empty(max(size, 1), dtype=torch.uint8, device=self.dev)
        self.mirror[:1].zero_()
        self.start = torch.cuda.Event(enable_timing=True)
        self.stop = torch.cuda.Event(enable_timing=True)
        self.side = torch.cuda.Stream(device=self.dev)  # where a block is captured
        self.scratch = torch.zeros(1, device=self.dev)   # clear_error's op
        torch.cuda.synchronize()
        self.span = (self.mirror.data_ptr(), self.mirror.data_ptr() + size)
        self.name = torch.cuda.get_device_name(self.dev)
        self.graph = None
        self.graph_key = None
        self.graph_nodes = 0
        self.graph_failed = ""  # why capture failed, once it has

    def sync(self):
        self.torch.cuda.synchronize()

    # ---- tensors ----------------------------------------------------------------------------
    def view(self, dt, shape, offset, nbytes):
        """A tensor of dtype `dt` and `shape` at `offset` of the mirror (a view, no copy)."""
        torch = self.torch
        n = 1
        for s in shape:
            n *= s
        if n == 0:
            return torch.empty(shape, dtype=dt, device=self.dev)
        return self.mirror[offset: offset + nbytes].view(dt).view(shape)

    def reset(self):
        """A new setup: the graph of the last layout is gone."""
        self.drop_graph()

    def drop_graph(self):
        if self.graph is not None:
            self.graph.reset()
        self.graph, self.graph_key, self.graph_nodes = None, None, 0

    def inputs_at(self, host, slot, window):
        """The inputs of `slot` as window `window` reads them (wire.h window_shift). A shifted
        view is made for its call and dropped after it, never kept: views kept across calls were
        small allocations placed among a candidate's temporaries, which fragmented a worker's heap
        (lathe_kernel.py run_table, bench/results/python-heap-2026-12-06.md)."""
        ins = host.slots[slot][0]
        if window == 0:
            return ins
        out = []
        for i, t in enumerate(ins):
            d = host.layout.tensors[i]
            shift = window_shift(d.slack, window)
            if shift == 0 or t.numel() == 0:
                out.append(t)
                continue
            base = slot * host.layout.slot_stride + d.offset + shift
            out.append(self.view(t.dtype, list(t.shape), base, d.bytes))
        return out

    # ---- transfers and poison ------------------------------------------------------------------
    def slots_ok(self, host, c):
        return host.layout is not None and 0 < c.rotate and c.first_slot < len(host.slots) \
            and c.rotate <= len(host.slots) - c.first_slot

    def transfer(self, host, c, upload):
        """Slots [first_slot, first_slot + rotate): region -> device (upload) or back."""
        torch = self.torch
        if not self.slots_ok(host, c):
            return host.reply(W.BAD_COMMAND, 0, f"transfer: slots outside 0..{len(host.slots)}")
        stride = host.layout.slot_stride
        off, n = c.first_slot * stride, c.rotate * stride
        if n == 0:
            return host.reply()
        staged = torch.frombuffer(host.region, dtype=torch.uint8, count=n, offset=off)
        try:
            if upload:
                self.mirror[off: off + n].copy_(staged)
            else:
                staged.copy_(self.mirror[off: off + n])
            self.sync()
        except BaseException as e:  # noqa: BLE001 - a faulted context
            return host.failure(W.DEVICE_ERROR, "upload" if upload else "download", e)
        return host.reply()

    def poison_tensor(self, t):
        torch = self.torch
        if t.numel() == 0:
            return
        name = str(t.dtype).replace("torch.", "")
        if name in POISON:
            as_int, bits = POISON[name]
            t.view(getattr(torch, as_int)).fill_(bits)
        else:
            t.view(torch.uint8).fill_(POISON_BYTE)

    def poison(self, host, c):
        if not self.slots_ok(host, c):
            return host.reply(W.BAD_COMMAND, 0, f"poison: slots outside 0..{len(host.slots)}")
        try:
            self.poison_slots(host, range(c.first_slot, c.first_slot + c.rotate))
            self.sync()
        except BaseException as e:  # noqa: BLE001
            return host.failure(W.DEVICE_ERROR, "poisoning outputs", e)
        return host.reply()

    def poison_slots(self, host, slots):
        for s in slots:
            for o in host.slots[s][1]:
                self.poison_tensor(o)

    # ---- timed runs ---------------------------------------------------------------------------
    def calls(self, host, c):
        """The block's calls as lathe-worker-cuda makes them: call i on slot (first + i) % rotate,
        reading window window + (first + i) // rotate."""
        for i in range(c.calls):
            k = c.first_slot + i
            slot = k % c.rotate
            host.call(self.inputs_at(host, slot, c.window + k // c.rotate), host.slots[slot][1])

    def timed(self, work):
        """Seconds of `work` on the device, between two events on the current stream."""
        stream = self.torch.cuda.current_stream(self.dev)
        self.start.record(stream)
        work()
        self.stop.record(stream)
        self.torch.cuda.synchronize()
        return self.start.elapsed_time(self.stop) * 1e-3

    def failed(self, host, e, done):
        if is_device_error(e):
            r = host.failure(W.DEVICE_ERROR, "CUDA", e)
        else:
            r = host.call_failure(e)
        r.calls_done = done
        return r

    def run(self, host, c):
        if c.rotate == 0 or c.rotate > len(host.slots):
            return host.reply(W.BAD_COMMAND, 0, f"run: rotate {c.rotate} outside 1..{len(host.slots)} slots")
        if c.graph and not self.graph_failed:
            return self.run_graph(host, c)
        try:
            seconds = self.timed(lambda: self.calls(host, c))
        except BaseException as e:  # noqa: BLE001
            return self.failed(host, e, 0)
        r = host.done(c.calls)
        r.device_seconds = seconds
        if c.graph and r.st == W.OK:
            r.message = ("graph capture impossible, events: " + self.graph_failed).encode(
                "utf-8", "replace")[: W.MESSAGE_BYTES - 1]
        return r

    def capture(self, host, c):
        """The block's calls captured into a graph on the side stream; None when that worked,
        else the reply to send (the candidate failed) or "" (capture impossible: events)."""
        torch = self.torch
        self.drop_graph()
        g = torch.cuda.CUDAGraph()
        self.side.wait_stream(torch.cuda.current_stream(self.dev))
        raised = None
        try:
            with torch.cuda.stream(self.side):
                g.capture_begin()
                try:
                    self.calls(host, c)
                except BaseException as e:  # noqa: BLE001
                    raised = e
                finally:
                    g.capture_end()
        except BaseException as e:  # noqa: BLE001 - the capture itself failed
            raised = raised or e
        try:
            torch.cuda.current_stream(self.dev).wait_stream(self.side)
            torch.cuda.synchronize()
        except BaseException as e:  # noqa: BLE001 - a capture that faulted the device
            return self.failed(host, e, 0)
        if raised is not None:
            # A candidate that cannot run under capture (a host synchronization, the legacy
            # stream) runs under events from now on; one that fails outright fails there too.
            self.graph_failed = type(raised).__name__ + ": " + str(raised).split("\n")[0][:200]
            self.clear_error()
            return ""
        self.graph = g
        self.graph_key = (c.first_slot, c.rotate, c.calls, c.window)
        # The capture ran nothing on the captured stream, but work the candidate put on another
        # stream ran then and is in no replay: its outputs poisoned again, only replays write them.
        self.poison_slots(host, sorted({(c.first_slot + d) % c.rotate for d in range(min(c.calls, c.rotate))}))
        torch.cuda.synchronize()
        return None

    def clear_error(self):
        """A launch refused during the capture (the legacy stream's) leaves CUDA's last error set,
        not sticky: the next torch op that checks would report it as its own. One op of lathe's
        takes it (as lathe-worker-cuda's cudaGetLastError after a failed capture)."""
        for _ in range(2):
            try:
                self.scratch.add_(0)
                self.torch.cuda.synchronize()
                return
            except BaseException:  # noqa: BLE001 - the stale error, taken
                continue

    def run_graph(self, host, c):
        key = (c.first_slot, c.rotate, c.calls, c.window)
        captured = 0
        if self.graph is None or self.graph_key != key:
            why = self.capture(host, c)
            if why == "":
                return self.run(host, c)
            if why is not None:
                return why
            captured = 1
        try:
            seconds = self.timed(self.graph.replay)
        except BaseException as e:  # noqa: BLE001
            return self.failed(host, e, 0)
        r = host.done(c.calls)
        r.device_seconds = seconds
        r.graph_used = 1
        r.graph_captured = captured
        r.graph_nodes = self.graph_nodes
        return r

    # ---- comparability mode ---------------------------------------------------------------------
    def bench(self, host, c):
        """KernelBench's cuda_event protocol or Triton's do_bench on slot 0, as lathe-worker-cuda
        runs them (device_host.cpp bench): per-call event times from this process, whose sum
        lathe checks against its own clock."""
        torch = self.torch
        if not host.slots:
            return host.reply(W.BAD_COMMAND, 0, "bench before a successful setup")
        ins, outs = host.slots[0]
        stream = torch.cuda.current_stream(self.dev)
        times = []
        try:
            if c.protocol == 1:  # kernelbench
                for _ in range(c.warmup):
                    host.call(ins, outs)
                torch.cuda.synchronize()
                for _ in range(c.trials):
                    self.start.record(stream)
                    host.call(ins, outs)
                    self.stop.record(stream)
                    torch.cuda.synchronize()
                    times.append(self.start.elapsed_time(self.stop) * 1e-3)
            else:  # do_bench: the L2 flushed (256 MB) before each call, budgets in milliseconds
                flush = torch.empty(256 << 20, dtype=torch.int8, device=self.dev)
                self.start.record(stream)
                for _ in range(5):
                    flush.zero_()
                    host.call(ins, outs)
                self.stop.record(stream)
                torch.cuda.synchronize()
                est = max(self.start.elapsed_time(self.stop) * 1e-3 / 5, 1e-7)
                for _ in range(max(1, int(c.warmup_ms * 1e-3 / est))):
                    host.call(ins, outs)
                n = int(min(100000, max(1, c.rep_ms * 1e-3 / est)))
                marks = [(torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True))
                         for _ in range(n)]
                for a, b in marks:
                    flush.zero_()
                    a.record(stream)
                    host.call(ins, outs)
                    b.record(stream)
                torch.cuda.synchronize()
                times = [a.elapsed_time(b) * 1e-3 for a, b in marks]
        except BaseException as e:  # noqa: BLE001
            return self.failed(host, e, 0)
        r = host.done(len(times))
        if r.st != W.OK:
            return r
        st = sorted(times)
        n = len(st)

        def pct(q):
            pos = q * (n - 1)
            lo = int(pos)
            hi = min(lo + 1, n - 1)
            return st[lo] + (st[hi] - st[lo]) * (pos - lo)
        mean = sum(st) / n
        b = r.bench
        b.trials, b.mean_s, b.min_s, b.max_s = n, mean, st[0], st[-1]
        b.std_s = (sum((x - mean) ** 2 for x in st) / n) ** 0.5
        b.median_s, b.p20_s, b.p80_s = pct(0.5), pct(0.2), pct(0.8)
        return r

    def answer(self, host, c):
        """The device's commands, or None for the host's."""
        k = c.kind
        if k in (W.UPLOAD, W.DOWNLOAD):
            return self.transfer(host, c, k == W.UPLOAD)
        if k == W.POISON:
            return self.poison(host, c)
        if k == W.RUN:
            if not host.slots:
                return host.reply(W.BAD_COMMAND, 0, "run before a successful setup")
            return self.run(host, c)
        if k == W.BENCH:
            return self.bench(host, c)
        if k in (W.FILL, W.SHARE):
            # lathe sends neither to a Python worker (gate/evaluator.h: no device trials, no IPC).
            return host.reply(W.BAD_COMMAND, 0, "the Python worker draws no inputs on the device and "
                              "shares no buffer (CUDA IPC): lathe stages every trial through host memory")
        return None
