#!/usr/bin/env python3
"""What the Python worker's op record costs a candidate per torch op (issue 42; python/lathe_ops.py,
src/gate/cpu/op_record.h). Run with the interpreter lathe's Python worker uses (/usr/bin/python3
on Debian, with python3-torch):

    /usr/bin/python3 bench/gate/op_record_cost.py [--rounds 11] [--ops 20000]

Per round, interleaved: a small op (x.add(1.0) on 16 floats) with no dispatch mode, under the
observer's mode without a record, and under the mode writing lathe's record to a pipe that
another process drains, once woken by every write (`eager`, as a poll on the pipe would) and once
reading every 10 ms (`ticks`, as lathe does), for a compute op (written) and a plumbing op
(x.view(16), never written). Medians in microseconds per op, and the paired extra per round.

    /usr/bin/python3 bench/gate/op_record_cost.py --hook build/liblathe-torch-hook.so

The record written from torch's dispatcher instead (src/worker/torch_op_hook.cpp, what the worker
uses where lathe was built against its torch: no mode at all). A hook cannot be taken out of a
process, so each round runs two fresh interpreters one after the other, alternating which goes
first: one with no hook, one with the hook writing to a pipe read on 10 ms ticks.
"""
import argparse
import os
import statistics
import subprocess
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "python"))
import torch  # noqa: E402
import lathe_ops  # noqa: E402

TICKS = ("import os, time, fcntl\nfcntl.fcntl(0, fcntl.F_SETFL, os.O_NONBLOCK)\nwhile True:\n"
         "    time.sleep(0.01)\n    try:\n        while os.read(0, 1 << 20): pass\n"
         "    except BlockingIOError: pass\n")


def reader(kind):
    r, w = os.pipe()
    cmd = ["cat"] if kind == "eager" else [sys.executable, "-c", TICKS]
    p = subprocess.Popen(cmd, stdin=r, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    os.close(r)
    return p, w


def per_op(op, mode, n):
    if mode is None:
        t = time.perf_counter()
        for _ in range(n):
            op()
        return (time.perf_counter() - t) / n * 1e6
    with mode:
        t = time.perf_counter()
        for _ in range(n):
            op()
        return (time.perf_counter() - t) / n * 1e6


def child(lib, n):
    """One interpreter's per-op times (compute, plumbing), with the hook installed when `lib`."""
    x = torch.ones(16)
    if lib:
        import ctypes
        p, w = reader("ticks")
        why = lathe_ops.install_hook(torch, ctypes.CDLL(lib), w)
        if why:
            raise SystemExit(why)
    for op in (lambda: x.add(1.0), lambda: x.view(16)):
        per_op(op, None, n // 10)  # warm
    print(per_op(lambda: x.add(1.0), None, n), per_op(lambda: x.view(16), None, n), flush=True)
    if lib:
        p.kill()


def hook_rounds(lib, rounds, n):
    res = {"none": [], "hook": []}
    for i in range(rounds):
        order = ("none", "hook") if i % 2 == 0 else ("hook", "none")
        for how in order:
            out = subprocess.run([sys.executable, os.path.abspath(__file__), "--child", lib if how == "hook" else "",
                                  "--ops", str(n)], capture_output=True, text=True, check=True).stdout.split()
            res[how].append([float(v) for v in out])
    with open("/proc/loadavg") as f:
        load = f.read().split()[:3]
    print(f"torch {torch.__version__}, {rounds} rounds of {n} ops (fresh interpreters), load {' '.join(load)}")
    for j, opname in enumerate(("compute", "plumbing")):
        none = [r[j] for r in res["none"]]
        hook = [r[j] for r in res["hook"]]
        extra = statistics.median([h - b for h, b in zip(hook, none)])
        print(f"{opname:9s} no hook median {statistics.median(none):6.2f} us/op, hook {statistics.median(hook):6.2f}"
              f" us/op, paired extra {extra:+.2f}")


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--rounds", type=int, default=11)
    ap.add_argument("--ops", type=int, default=20000)
    ap.add_argument("--hook", default=None, help="liblathe-torch-hook.so: the hook's rounds instead")
    ap.add_argument("--child", default=None, help=argparse.SUPPRESS)
    a = ap.parse_args()
    if a.child is not None:
        return child(a.child, a.ops)
    if a.hook:
        return hook_rounds(a.hook, a.rounds, a.ops)
    x = torch.ones(16)
    ops = {"compute": lambda: x.add(1.0), "plumbing": lambda: x.view(16)}
    readers = {k: reader(k) for k in ("eager", "ticks")}
    res = {}
    for _ in range(a.rounds):
        for opname, op in ops.items():
            res.setdefault((opname, "no mode"), []).append(per_op(op, None, a.ops))
            res.setdefault((opname, "mode"), []).append(per_op(op, lathe_ops.make_mode(torch)[0], a.ops))
            for k, (_, w) in readers.items():
                m = lathe_ops.make_mode(torch, w)[0]
                res.setdefault((opname, "mode+record " + k), []).append(per_op(op, m, a.ops))
    for p, _ in readers.values():
        p.kill()
    with open("/proc/loadavg") as f:
        load = f.read().split()[:3]
    print(f"torch {torch.__version__}, {a.rounds} rounds of {a.ops} ops, load {' '.join(load)}")
    for (opname, how), v in res.items():
        extra = ""
        if how.startswith("mode+record"):
            base = res[(opname, "mode")]
            extra = f"   paired extra over the mode {statistics.median([b - c for b, c in zip(v, base)]):+.2f}"
        print(f"{opname:9s} {how:20s} median {statistics.median(v):6.2f} us/op{extra}")


if __name__ == "__main__":
    main()
