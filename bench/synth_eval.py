#!/usr/bin/env python3
"""Every problem `lathe synth` kept, evaluated with its own Model as the candidate (issue 47).

    bench/synth_eval.py DIR [--lathe PATH] [--workspace WS] [--limit N] [--timeout S]

DIR is a synth output (its manifest.json). For each kept module, the candidate is its problem
file with `class ModelNew(Model): pass` appended, gated with `lathe eval PROBLEM CANDIDATE
--no-time --json` (correctness only: compile, load, check on fresh seeds against the fp64
reference, in the sandbox). A problem lathe synth keeps should come out `ok`; anything else is
listed with its message. Prints one line per problem and a tally by outcome; exits 1 when any
problem is not `ok`. CI runs two of them (tests/integration/synth_test.cpp); this does all.
"""
import argparse
import collections
import json
import os
import subprocess
import sys
import tempfile
import time


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("dir")
    ap.add_argument("--lathe", default="build/lathe")
    ap.add_argument("--workspace", help="lathe's workspace (default: a fresh temporary one)")
    ap.add_argument("--limit", type=int, default=0, help="the first N kept problems only")
    ap.add_argument("--timeout", type=float, default=300, help="seconds per evaluation")
    a = ap.parse_args()
    with open(os.path.join(a.dir, "manifest.json"), encoding="utf-8") as f:
        manifest = json.load(f)
    kept = [m for m in manifest["modules"] if m["status"] == "kept" and m.get("problem")]
    if a.limit:
        kept = kept[:a.limit]
    tally, start = collections.Counter(), time.monotonic()
    with tempfile.TemporaryDirectory(prefix="synth-eval-") as tmp:
        ws = a.workspace or os.path.join(tmp, "ws")
        for m in kept:
            problem = os.path.join(a.dir, m["problem"])
            candidate = os.path.join(tmp, "own_" + os.path.basename(problem))
            with open(problem, encoding="utf-8") as f, open(candidate, "w", encoding="utf-8") as g:
                g.write(f.read() + "\n\nclass ModelNew(Model):\n    pass\n")
            t0 = time.monotonic()
            try:
                r = subprocess.run([a.lathe, "--workspace", ws, "eval", problem, candidate,
                                    "--no-time", "--json"], capture_output=True, text=True,
                                   timeout=a.timeout)
                j = json.loads(r.stdout) if r.stdout.strip().startswith("{") else {}
                outcome = j.get("outcome") or f"no result (exit {r.returncode})"
                why = j.get("message") or r.stderr.strip()[-300:]
            except subprocess.TimeoutExpired:
                outcome, why = "timed out", f"over {a.timeout:g} s"
            tally[outcome] += 1
            line = f"{outcome:10s} {time.monotonic() - t0:6.1f} s  {m['tree']}/{m['file']}:{m['class']}"
            print(line + ("" if outcome == "ok" else f"  ({why})"), flush=True)
    print(f"{len(kept)} problems in {time.monotonic() - start:.0f} s: "
          + ", ".join(f"{k} {v}" for k, v in tally.most_common()))
    return 0 if tally.get("ok", 0) == len(kept) else 1


if __name__ == "__main__":
    sys.exit(main())
