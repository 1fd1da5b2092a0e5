#!/usr/bin/env python3
"""Every problem `lathe synth` kept, evaluated with its own Model as the candidate (issue 47).

    bench/synth_eval.py DIR [--lathe PATH] [--workspace WS] [--limit N] [--timeout S]
                            [--jobs N] [--json OUT]

DIR is a synth output (its manifest.json). For each kept module, the candidate is its problem
file with `class ModelNew(Model): pass` appended, gated with `lathe eval PROBLEM CANDIDATE
--platform cpu --no-time --json` (synth's problems are CPU problems, whatever their inlined source
names: torch.nn's RNN names torch.cuda; correctness only: compile, load, check on fresh seeds against the fp64
reference, in the sandbox). A problem lathe synth keeps should come out `ok`; anything else is
listed with its message. `--jobs N` runs N evaluations at once, each worker with a workspace of
its own (checks take the CPU lock shared, so they may overlap). Prints one line per problem as
it ends and a tally by outcome, and by family for the ones not `ok`; `--json OUT` writes every
result (tree, file, class, family, outcome, message, seconds). Exits 1 when any problem is not
`ok`. CI runs a sample of them (tests/integration/synth_default_test.cpp); this does all.
"""
import argparse
import collections
import concurrent.futures
import json
import os
import subprocess
import sys
import tempfile
import threading
import time


def evaluate(a, tmp, ws, m):
    """One kept problem through `lathe eval` with its own Model as the candidate."""
    problem = os.path.join(a.dir, m["problem"])
    candidate = os.path.join(tmp, "own_" + os.path.basename(problem))
    with open(problem, encoding="utf-8") as f, open(candidate, "w", encoding="utf-8") as g:
        g.write(f.read() + "\n\nclass ModelNew(Model):\n    pass\n")
    t0 = time.monotonic()
    try:
        r = subprocess.run([a.lathe, "--workspace", ws, "eval", problem, candidate,
                            "--platform", "cpu", "--no-time", "--json"], capture_output=True, text=True,
                           timeout=a.timeout)
        j = json.loads(r.stdout) if r.stdout.strip().startswith("{") else {}
        outcome = j.get("outcome") or f"no result (exit {r.returncode})"
        why = j.get("message") or r.stderr.strip()[-300:]
    except subprocess.TimeoutExpired:
        outcome, why = "timed out", f"over {a.timeout:g} s"
    return {"tree": m["tree"], "file": m["file"], "class": m["class"],
            "family": m.get("family"), "outcome": outcome,
            "message": "" if outcome == "ok" else why,
            "seconds": round(time.monotonic() - t0, 1)}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("dir")
    ap.add_argument("--lathe", default="build/lathe")
    ap.add_argument("--workspace", help="lathe's workspace (default: a fresh temporary one per job)")
    ap.add_argument("--limit", type=int, default=0, help="the first N kept problems only")
    ap.add_argument("--timeout", type=float, default=300, help="seconds per evaluation")
    ap.add_argument("--jobs", type=int, default=1, help="evaluations at once (default 1)")
    ap.add_argument("--json", help="write every result here")
    a = ap.parse_args()
    a.lathe = os.path.abspath(a.lathe)
    with open(os.path.join(a.dir, "manifest.json"), encoding="utf-8") as f:
        manifest = json.load(f)
    kept = [m for m in manifest["modules"] if m["status"] == "kept" and m.get("problem")]
    if a.limit:
        kept = kept[:a.limit]
    start, lock, results = time.monotonic(), threading.Lock(), []
    with tempfile.TemporaryDirectory(prefix="synth-eval-") as tmp:
        local = threading.local()

        def one(m):
            if not hasattr(local, "ws"):  # one workspace per worker thread
                local.ws = a.workspace or tempfile.mkdtemp(prefix="ws-", dir=tmp)
            r = evaluate(a, tmp, local.ws, m)
            with lock:
                results.append(r)
                line = (f"{r['outcome']:10s} {r['seconds']:6.1f} s  "
                        f"{r['tree']}/{r['file']}:{r['class']}")
                print(line + (f"  ({r['message']})" if r["message"] else ""), flush=True)
        with concurrent.futures.ThreadPoolExecutor(max_workers=max(1, a.jobs)) as pool:
            list(pool.map(one, kept))
    wall = time.monotonic() - start
    tally = collections.Counter(r["outcome"] for r in results)
    bad = collections.Counter((r["family"], r["outcome"]) for r in results if r["outcome"] != "ok")
    print(f"{len(kept)} problems in {wall:.0f} s ({a.jobs} at a time): "
          + ", ".join(f"{k} {v}" for k, v in tally.most_common()))
    for (family, outcome), n in sorted(bad.items(), key=str):
        print(f"  not ok: {family}: {outcome} {n}")
    if a.json:
        with open(a.json, "w", encoding="utf-8") as f:
            json.dump({"dir": a.dir, "jobs": a.jobs, "wall_seconds": round(wall, 1),
                       "tally": dict(tally), "results": results}, f, indent=1)
    return 0 if tally.get("ok", 0) == len(kept) else 1


if __name__ == "__main__":
    sys.exit(main())
