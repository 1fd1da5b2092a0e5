#!/usr/bin/env python3
"""How much of a task's hand-made lineage a decompose run recovered (issue 11's measure).

    bench/lineage_score.py LATHE WORKSPACE LINEAGE_TOML [--label TEXT]

Reads the newest decompose run of WORKSPACE through `lathe runs show --json` (so a run that was
stopped part-way still counts its accepted steps), prints each accepted backward step (the action
and the features the forward direction of that step adds) and the staged score, by the rule of
`lathe::lineages::score_against_stages` (src/lineage/staged.cpp): what the walk removed is the
union of its steps' forward additions; a hand-made stage transition is recovered when the walk
removed every feature that stage adds, partly when it removed some. (The C++ scorer reads the
features detected on each stage's build; this script reads the stages' `adds` from the file.)
The lineage.toml is ground truth read here, after the run; decompose never sees it.

>>> stages = [("s1", {"smem_tiling"}), ("s2", {"ldmatrix", "mma_sync"}), ("s3", {"cp_async_pipeline"})]
>>> score(stages, [{"cp_async_pipeline", "restrict"}, {"mma_sync"}])
(['s3'], ['s2'])
>>> score(stages, [])
([], [])
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


def score(stages, added_by_step):
    """(recovered, partly recovered) stage kernels: stages is [(kernel, adds)], added_by_step the
    forward additions of each accepted step."""
    removed = set().union(*added_by_step) if added_by_step else set()
    full = [k for k, adds in stages if adds and adds <= removed]
    part = [k for k, adds in stages if adds & removed and not adds <= removed]
    return full, part


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
    hit, part = score(stages, [set(added) for _, added, _ in walked])
    print(f"  staged score: {len(hit)} of {len(stages)} hand-made stage transitions recovered "
          f"({', '.join(hit) or 'none'}), {len(part)} partly ({', '.join(part) or 'none'}); hand-made: "
          + "; ".join(f"{k} adds {','.join(sorted(s))}" for k, s in stages))
    return 0


if __name__ == "__main__":
    sys.exit(main())
