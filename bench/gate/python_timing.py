#!/usr/bin/env python3
"""Identical work through the gate, evaluation after evaluation (issue 44, item 5): how far apart
the paired ratio and the A/A control read when the candidate does exactly what the baseline does,
on the Python path (a ModelNew of the Model's own torch ops) and on the C-ABI path (a task's
baseline kernel against itself), and whether a real gain on the Python path is decided (case
python_faster). Not a test: it prints a table for the closing note.

Each round runs every case once with every binary given (`--lathe A --lathe B`, interleaved, so
that both see the same machine), one `lathe eval --json` in a fresh workspace each.

  bench/gate/python_timing.py --lathe build/lathe [--lathe OTHER] --rounds 4 --out rows.json
  bench/gate/python_timing.py --worker-rev 1b51cf8 --case swish --rounds 4   # before/after a worker change
  bench/gate/python_timing.py --table rows.json

--worker-rev REV adds a variant: the same binary with the Python worker of commit REV
(python/lathe_kernel.py from git, the rest of python/ as checked out) and glibc's default malloc
thresholds (the variant's worker drops GLIBC_TUNABLES and starts itself again before it does
anything else), so that the Python worker's heap fix (bench/results/python-heap-2026-12-06.md)
is measured against what came before it, interleaved on the same machine.

What the summary says per binary and case: the spread of the paired ratios (identical work: every
one should read 1), the median A/A interval's width, how many verdicts were decided (`same` is the
right one for identical work, where `faster` or `slower` is a false verdict; `faster` for
python_faster), and the wall time.
"""
import argparse, json, math, os, statistics, subprocess, sys, tempfile, time

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
CASES = {
    "python": ["tests/problems/kb_linear_gelu.py", "tests/problems/modelnew/linear_gelu_torch.py"],
    "c_abi": ["tasks/silu", "naive"],
    # Not identical: Linear + GELU fused in inline C++ (one loop, no intermediate), ~2x less work
    # a call than eager torch's two ops; the right verdict is `faster`.
    "python_faster": ["tests/problems/kb_linear_gelu.py", "tests/problems/modelnew/linear_gelu_inline.py"],
    # KernelBench level-1 problem 25 (16 x 16384, two eager ops, 1 MiB temporaries) against a
    # ModelNew of the same ops: where the Python worker's heap fragmented (issue 44, item 5).
    "swish": ["tests/data/modelnew_run/problems/level1/25_Swish.py", "bench/gate/swish_eager.py"],
}

# Put first in the variant's lathe_kernel.py: the worker runs again without the thresholds.
DEFAULT_MALLOC = """import os as _os, sys as _sys
if "GLIBC_TUNABLES" in _os.environ:
    _env = {k: v for k, v in _os.environ.items() if k != "GLIBC_TUNABLES"}
    _os.execve(_sys.executable, [_sys.executable] + _sys.orig_argv[1:], _env)
"""


def worker_of(rev, into, default_malloc=True):
    """A python/ folder whose lathe_kernel.py is commit REV's, with glibc's default thresholds
    unless `default_malloc` is False (then the variant differs in lathe_kernel.py alone)."""
    import shutil
    dst = os.path.join(into, "python")
    shutil.copytree(os.path.join(ROOT, "python"), dst)
    old = subprocess.run(["git", "show", f"{rev}:python/lathe_kernel.py"], cwd=ROOT, check=True,
                         capture_output=True, text=True).stdout
    lines = old.split("\n")
    at = 1 if lines and lines[0].startswith("#!") else 0
    with open(os.path.join(dst, "lathe_kernel.py"), "w") as f:
        f.write("\n".join(lines[:at] + ([DEFAULT_MALLOC] if default_malloc else []) + lines[at:]))
    return os.path.join(dst, "lathe_kernel.py")


def run(binary, case, extra, env=None):
    args = CASES[case]
    with tempfile.TemporaryDirectory() as ws:
        t0 = time.monotonic()
        p = subprocess.run([binary, "--workspace", os.path.join(ws, ".lathe"), "eval", *args, "--json", *extra],
                           capture_output=True, text=True, cwd=ROOT, env=env)
        wall = time.monotonic() - t0
    try:
        j = json.loads(p.stdout)
    except json.JSONDecodeError:
        return {"outcome": "no_json", "stderr": p.stderr[-400:], "wall": wall}
    pr, aa = j.get("paired") or {}, j.get("aa") or {}
    return {"outcome": j.get("outcome"), "decision": j.get("decision"), "wall": wall,
            "message": (j.get("message") or "")[:300] if j.get("outcome") not in ("ok", "unstable") else "",
            "cand_us": (j.get("median_seconds") or 0) * 1e6, "base_us": (j.get("baseline_median_seconds") or 0) * 1e6,
            "ratio": pr.get("ratio"), "lo": pr.get("ci_low"), "hi": pr.get("ci_high"),
            "aa": aa.get("ratio"), "aa_lo": aa.get("ci_low"), "aa_hi": aa.get("ci_high"),
            "epsilon": j.get("epsilon"), "blocks": len(pr.get("a_seconds") or []),
            "time_stage": next((s["seconds"] for s in j.get("stage_seconds", []) if s.get("stage") == "time"), None)}


def fmt(x, d=3):
    return "-" if x is None else f"{x:.{d}f}"


def table(rows):
    keys = sorted({(r["binary"], r["case"]) for r in rows})
    print("| binary | case | runs | paired ratios (min–max) | geo. sd of ratio | median A/A width | "
          "verdicts | median wall s |")
    print("|---|---|---|---|---|---|---|---|")
    for b, c in keys:
        rs = [r for r in rows if r["binary"] == b and r["case"] == c]
        ratios = [r["ratio"] for r in rs if r.get("ratio")]
        logs = [math.log(x) for x in ratios]
        sd = math.exp(statistics.stdev(logs)) if len(logs) > 1 else None
        widths = [r["aa_hi"] / r["aa_lo"] for r in rs if r.get("aa_lo")]
        verdicts = {}
        for r in rs:
            k = f'{r.get("outcome")}/{r.get("decision")}'
            verdicts[k] = verdicts.get(k, 0) + 1
        print(f"| {b} | {c} | {len(rs)} | {fmt(min(ratios) if ratios else None)}–{fmt(max(ratios) if ratios else None)} | "
              f"{fmt(sd)} | {fmt(statistics.median(widths) if widths else None)} | "
              f"{', '.join(f'{k} x{v}' for k, v in sorted(verdicts.items()))} | "
              f"{fmt(statistics.median(r['wall'] for r in rs), 0)} |")


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--lathe", action="append", help="a lathe binary (repeat to compare, interleaved)")
    ap.add_argument("--worker-rev", help="also run the Python worker of this commit, default malloc thresholds")
    ap.add_argument("--same-malloc", action="store_true",
                    help="the --worker-rev variant keeps lathe's malloc thresholds (differs in lathe_kernel.py alone)")
    ap.add_argument("--rounds", type=int, default=4)
    ap.add_argument("--case", action="append", choices=sorted(CASES), help="default: all")
    ap.add_argument("--out", help="write the rows here (JSON), as they come")
    ap.add_argument("--table", help="print the table of a rows file and stop")
    ap.add_argument("extra", nargs="*", help="after --: more `lathe eval` arguments")
    a = ap.parse_args()
    if a.table:
        table(json.load(open(a.table)))
        return
    variants = [(b, b, None) for b in a.lathe or [os.path.join(ROOT, "build/lathe")]]
    keep = tempfile.TemporaryDirectory()
    os.chmod(keep.name, 0o755)  # the worker runs as a user of its own and must read the script
    if a.worker_rev:
        env = dict(os.environ, LATHE_KERNEL_WORKER=worker_of(a.worker_rev, keep.name, not a.same_malloc))
        variants.append((f"{a.worker_rev} worker", variants[0][1], env))
    rows = []
    for rnd in range(a.rounds):
        for case in a.case or sorted(CASES):
            for b, binary, env in variants:
                r = run(os.path.abspath(binary), case, a.extra, env)
                r.update(binary=b, case=case, round=rnd)
                rows.append(r)
                print(f"{rnd} {case:7s} {b}: {r.get('outcome')}/{r.get('decision')} cand {fmt(r.get('cand_us'), 1)} us "
                      f"base {fmt(r.get('base_us'), 1)} us ratio {fmt(r.get('ratio'))} [{fmt(r.get('lo'))}, {fmt(r.get('hi'))}] "
                      f"aa {fmt(r.get('aa'))} [{fmt(r.get('aa_lo'))}, {fmt(r.get('aa_hi'))}] blocks {r.get('blocks')} "
                      f"time {fmt(r.get('time_stage'), 1)} s wall {r['wall']:.0f} s {r.get('message') or ''}", flush=True)
                if a.out:
                    json.dump(rows, open(a.out, "w"), indent=1)
    table(rows)


if __name__ == "__main__":
    sys.exit(main())
