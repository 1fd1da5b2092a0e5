#!/usr/bin/env python3
"""What an OpenMP pool's wait costs eager torch on this machine (issue 44, item 5): small eager calls
timed in fresh interpreters under the environments a worker could get — one intra-op thread; two
that sleep at once after a region (OMP_WAIT_POLICY=PASSIVE, GOMP_SPINCOUNT=0: the sandbox's setting
for every worker until 2026-12-07); two that spin 10k or 100k iterations (about 0.1 and 1 ms) before
they sleep; two that never sleep (ACTIVE). The environments interleave, round after round, so
that a drift of the machine's load falls on all of them. Not a test: it prints a table.

  bench/gate/omp_spin.py [--python /usr/bin/python3] [--rounds 2] [--out rows.jsonl]
  bench/gate/omp_spin.py --child CASE        (one measurement, in the environment it was given)

Cases: `lingelu` (nn.Linear 32->16 + GELU on 8x32: the gate's identical-work Python case) and
`swish` (x * sigmoid(x) on 16x16384: KernelBench level-1 problem 25). Each process warms up, then
times 30 blocks; the row is the 10th, 50th and 90th percentile of the blocks' time per call.
"""
import argparse, json, os, subprocess, sys, time

ENVS = {
    "1 thread": {"OMP_NUM_THREADS": "1", "OMP_WAIT_POLICY": "PASSIVE", "GOMP_SPINCOUNT": "0"},
    "2, spin 0": {"OMP_NUM_THREADS": "2", "OMP_WAIT_POLICY": "PASSIVE", "GOMP_SPINCOUNT": "0"},
    "2, spin 10k": {"OMP_NUM_THREADS": "2", "OMP_WAIT_POLICY": "PASSIVE", "GOMP_SPINCOUNT": "10000"},
    "2, spin 100k": {"OMP_NUM_THREADS": "2", "OMP_WAIT_POLICY": "PASSIVE", "GOMP_SPINCOUNT": "100000"},
    "2, active": {"OMP_NUM_THREADS": "2", "OMP_WAIT_POLICY": "ACTIVE"},
}
# The workers' malloc thresholds (gate/cpu/sandbox.h malloc_tunables): without them the Swish's
# 1 MiB temporaries are mapped and unmapped every call and page faults swamp the rest.
TUNABLES = "glibc.malloc.mmap_threshold=33554432:glibc.malloc.trim_threshold=1073741824"


def child(case):
    import torch
    if case == "swish":
        x = torch.randn(16, 16384)
        f, n = (lambda: x * torch.sigmoid(x)), 100
    else:
        lin, g, x = torch.nn.Linear(32, 16), torch.nn.GELU(), torch.randn(8, 32)
        f, n = (lambda: g(lin(x))), 400
    with torch.no_grad():
        for _ in range(3 * n):
            f()
        blocks = []
        for _ in range(30):
            t = time.perf_counter()
            for _ in range(n):
                f()
            blocks.append((time.perf_counter() - t) / n * 1e6)
    blocks.sort()
    print(json.dumps({"p10_us": blocks[3], "p50_us": blocks[15], "p90_us": blocks[26]}))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--child")
    ap.add_argument("--python", default="/usr/bin/python3", help="an interpreter with torch")
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--out")
    a = ap.parse_args()
    if a.child:
        return child(a.child)
    rows = []
    for r in range(a.rounds):
        for name, env in ENVS.items():
            for case in ("swish", "lingelu"):
                e = {"PATH": "/usr/bin:/bin", "GLIBC_TUNABLES": TUNABLES, **env}
                p = subprocess.run([a.python, os.path.abspath(__file__), "--child", case], env=e,
                                   capture_output=True, text=True)
                if p.returncode != 0:
                    sys.exit(f"{case} under {name}: {p.stderr.strip()[-400:]}")
                row = {"round": r, "env": name, "case": case, **json.loads(p.stdout)}
                rows.append(row)
                print(json.dumps(row), flush=True)
                if a.out:
                    with open(a.out, "a") as f:
                        f.write(json.dumps(row) + "\n")
    print("\n| case | environment | per call, us (p10 / p50 / p90 of the blocks), each round |\n|---|---|---|")
    for case in ("lingelu", "swish"):
        for name in ENVS:
            cells = [f"{x['p10_us']:.1f} / {x['p50_us']:.1f} / {x['p90_us']:.1f}" for x in rows
                     if x["case"] == case and x["env"] == name]
            print(f"| {case} | {name} | {'; '.join(cells)} |")


if __name__ == "__main__":
    main()
