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
    p = subprocess.Popen(cmd, stdin=r, stdout=subprocess.DEVNULL)
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


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--rounds", type=int, default=11)
    ap.add_argument("--ops", type=int, default=20000)
    a = ap.parse_args()
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
