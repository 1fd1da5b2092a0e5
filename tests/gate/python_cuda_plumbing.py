"""The Python worker's device path (python/lathe_cuda.py) on the CPU, with the device's buffer
replaced by host memory: what decides things without a GPU. The slots' tensors are views of the
mirror at the region's offsets, an input at window w is the view at its shift (wire.h
window_shift), upload and download copy exactly the slots asked for, poison writes core/poison.h's
patterns, and the commands lathe never sends to a Python worker are refused with the reason.
Run by python_cuda_test (tests/gate/python_cuda_test.cpp): argv[1] is lathe's python/ folder.
Prints "ok" when every check held; an AssertionError (exit 1) says which did not."""
import mmap
import struct
import sys

sys.path.insert(0, sys.argv[1])

import torch  # noqa: E402

import lathe_cuda  # noqa: E402
import lathe_kernel  # noqa: E402
import lathe_wire as W  # noqa: E402


class HostMirror(lathe_cuda.Device):
    """A Device whose mirror is host memory: no context, no events, nothing to synchronize."""

    def __init__(self, torch, size):  # noqa: D107 - lathe_cuda.Device.__init__ needs a GPU
        self.torch = torch
        self.dev = torch.device("cpu")
        self.mirror = torch.zeros(size, dtype=torch.uint8)
        self.span = (self.mirror.data_ptr(), self.mirror.data_ptr() + size)
        self.graph, self.graph_key, self.graph_nodes, self.graph_failed = None, None, 0, ""

    def sync(self):
        pass


STRIDE, SLOTS = 4096, 2
size = STRIDE * SLOTS
region = mmap.mmap(-1, size)
host = lathe_kernel.Host(region, size, None, False, device="cuda")
assert host.device == "cuda", "--device reaches the worker's host"
host.torch = torch
host.cuda = HostMirror(torch, size)
host.launch = lambda ins, outs, scalars: 0  # setup needs a loaded kernel


def command(kind, **fields):
    c = W.Command()
    c.magic, c.kind = W.MAGIC, kind
    for k, v in fields.items():
        setattr(c, k, v)
    return c


setup = command(W.SETUP, num_inputs=1, num_outputs=1, num_slots=SLOTS, slot_stride=STRIDE)
for i, (offset, slack) in enumerate([(0, 512), (1024, 0)]):
    d = setup.tensors[i]
    d.type, d.ndim, d.offset, d.bytes, d.slack, d.is_output = 2, 1, offset, 256, slack, i  # float32 [64]
    d.shape[0] = 64
r = host.answer(setup)
assert r.st == W.OK, r.message

# The slots' tensors are views of the mirror at the region's offsets, not host memory.
base = host.cuda.mirror.data_ptr()
for s in range(SLOTS):
    ins, outs = host.slots[s]
    assert ins[0].data_ptr() == base + s * STRIDE, (s, ins[0].data_ptr() - base)
    assert outs[0].data_ptr() == base + s * STRIDE + 1024, (s, outs[0].data_ptr() - base)
    assert ins[0].dtype == torch.float32 and list(ins[0].shape) == [64]

# Window w of an input with 512 bytes of slack starts 256 * (w % 3) bytes in: as lathe-worker-cuda
# places it, and as lathe's references of the timed calls read it.
for w, shift in [(0, 0), (1, 256), (2, 512), (3, 0), (4, 256)]:
    assert lathe_cuda.window_shift(512, w) == shift, (w, lathe_cuda.window_shift(512, w))
    v = host.cuda.inputs_at(host, 1, w)[0]
    assert v.data_ptr() == base + STRIDE + shift, (w, v.data_ptr() - base - STRIDE)
assert lathe_cuda.window_shift(0, 7) == 0

# Upload copies the slots asked for, and only those.
torch.frombuffer(region, dtype=torch.float32, count=64, offset=STRIDE).copy_(torch.arange(64.0))
r = host.answer(command(W.UPLOAD, first_slot=1, rotate=1))
assert r.st == W.OK, r.message
assert torch.equal(host.slots[1][0][0], torch.arange(64.0)), "slot 1's input uploaded"
assert int(host.slots[0][0][0].abs().sum()) == 0, "slot 0 left as it was"

# Poison writes the pattern of core/poison.h into the outputs; download brings it back.
r = host.answer(command(W.POISON, first_slot=0, rotate=2))
assert r.st == W.OK, r.message
r = host.answer(command(W.DOWNLOAD, first_slot=0, rotate=1))
assert r.st == W.OK, r.message
words = struct.unpack_from("<64I", region, 1024)
assert all(w == 0x7FC0DEAD for w in words), hex(words[0])
assert struct.unpack_from("<I", region, STRIDE + 1024)[0] == 0, "slot 1 not downloaded"

# Every dtype's pattern, bit for bit.
for dt, word, fmt in [(torch.float64, 0x7FF8DEADDEADDEAD, "<Q"), (torch.float16, 0x7E5A, "<H"),
                      (torch.bfloat16, 0x7FDA, "<H"), (torch.int32, 0xA5A5A5A5, "<I"),
                      (torch.bool, 0xA5, "<B")]:
    t = torch.zeros(3, dtype=dt)
    host.cuda.poison_tensor(t)
    raw = t.view(torch.uint8).numpy().tobytes()
    got = struct.unpack_from(fmt, raw, 0)[0]
    assert got == word, (dt, hex(got))

# Slots outside the layout, and what lathe never sends a Python worker, are refused with the reason.
r = host.answer(command(W.UPLOAD, first_slot=1, rotate=2))
assert r.st == W.BAD_COMMAND and b"slots outside" in r.message, r.message
r = host.answer(command(W.FILL, first_slot=0, rotate=1))
assert r.st == W.BAD_COMMAND and b"host memory" in r.message, r.message

# A shifted view is made for its call, never kept (a kept view fragmented a worker's heap).
a, b = host.cuda.inputs_at(host, 1, 1)[0], host.cuda.inputs_at(host, 1, 1)[0]
assert a is not b and a.data_ptr() == b.data_ptr()
assert not hasattr(host.cuda, "windows")
r = host.answer(setup)
assert r.st == W.OK
print("ok")
