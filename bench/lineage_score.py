#!/usr/bin/env python3
"""How much of a task's hand-made lineage a decompose run recovered (issue 11's measure).

    bench/lineage_score.py LATHE WORKSPACE LINEAGE_TOML [--label TEXT]

Reads the newest decompose run of WORKSPACE through `lathe runs show --json` (so a run that was
stopped part-way still counts its accepted steps), prints each accepted backward step (the action
and the features the forward direction of that step adds) and the staged score: a hand-made stage
transition is recovered when one accepted step adds at least one of the features that stage adds.
The lineage.toml is ground truth read here, after the run; decompose never sees it.
"""
import argparse
import json
import os
import re
import subprocess
import sys


def lathe_json(lathe, ws, *args):
    out = subprocess.run([lathe, "--workspace", ws, *args, "--json"], capture_output=True, text=True)
    if out.returncode != 0:
        raise SystemExit(f"lathe {' '.join(args)}: {out.stderr.strip()[:300]}")
    return json.loads(out.stdout)


def stages_of(path):
    stages, kernel = [], None
    for line in open(path):
        m = re.match(r'\s*kernel\s*=\s*"([^"]+)"', line)
        if m:
            kernel = m.group(1)
        m = re.match(r'\s*adds\s*=\s*\[(.*)\]', line)
        if m:
            stages.append((kernel, set(re.findall(r'"([^"]+)"', m.group(1)))))
    return stages


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("lathe")
    ap.add_argument("workspace")
    ap.add_argument("lineage")
    ap.add_argument("--label", default="")
    a = ap.parse_args()
    runs = lathe_json(a.lathe, a.workspace, "runs", "list", "--kind", "decompose")
    runs = runs.get("runs", runs) if isinstance(runs, dict) else runs
    if not runs:
        print(f"{a.label}: no decompose run in {a.workspace}")
        return 1
    run = runs[0]
    rid = run.get("id") or run.get("run")
    events = lathe_json(a.lathe, a.workspace, "runs", "show", rid)["events"]
    walked, rejected, end = [], 0, None
    for e in events:
        body = e.get("body", {})
        if e["kind"] == "backward_accepted":
            t = body.get("transition", {})
            walked.append((t.get("action"), sorted({f["name"] for f in t.get("added", [])}),
                           t.get("speedup")))
        elif e["kind"] == "backward_rejected":
            rejected += 1
        elif e["kind"] in ("backward_finished", "finished", "failed"):
            end = body.get("reason") or body.get("error") or end
    print(f"{a.label}: run {rid} ({run.get('state')}): {len(walked)} accepted step(s), "
          f"{rejected} rejected; {(end or 'stopped before the walk ended')[:160]}")
    for i, (action, added, speedup) in enumerate(walked):
        sp = f"{speedup:.3f}" if isinstance(speedup, (int, float)) else speedup
        print(f"    step {i + 1}: {action:<28} the forward step adds {','.join(added) or '-':<32} "
              f"speedup {sp}")
    if not os.path.exists(a.lineage):
        print("  no hand-made lineage to score against")
        return 0
    stages = [(k, s) for k, s in stages_of(a.lineage) if s]
    sets = [set(added) for _, added, _ in walked]
    hit = [k for k, s in stages if any(s & w for w in sets)]
    print(f"  staged score: {len(hit)} of {len(stages)} hand-made stage transitions recovered "
          f"({', '.join(hit) or 'none'}); hand-made: "
          + "; ".join(f"{k} adds {','.join(sorted(s))}" for k, s in stages))
    return 0


if __name__ == "__main__":
    sys.exit(main())
