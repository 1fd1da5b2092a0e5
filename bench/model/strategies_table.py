#!/usr/bin/env python3
"""Issue 23 item 5: the strategies table from bench/model/optimize_stream.sh's output folders.

    bench/model/strategies_table.py OUT_ROOT [--rows-in ROWS.jsonl]... [--rows-out ROWS.jsonl] > table.md

OUT_ROOT holds one folder per stream, named STRATEGY-ABLATION-RUN (e.g. skills-none-r1,
skills-intent-only-r2), each with <task>.json (lathe.optimize/1) and ws-<task>/.lathe/lathe.db.
For every run: best vs the naive start, gap recovered (when the task has an expert), model calls,
the step attempts that failed by outcome (read from the run's events: a proposer failure by its
kind, a gate refusal by the evaluation outcome that refused it, a decision by its stage), and the
proposer's provenance (llm:<provider>/<model>, from the proposals' provenance). Not a test: the
numbers are evidence about one model on one machine.

--rows-out writes every run read from OUT_ROOT as one JSON line (kept in bench/results, so a later
session's runs can be added to the same tables); --rows-in adds runs kept that way.
"""
import collections
import json
import os
import sqlite3
import statistics
import sys


def events(db, run):
    con = sqlite3.connect(db)
    rows = con.execute("select seq, kind, json from run_events where run_id = ? order by seq", (run,)).fetchall()
    con.close()
    return [(seq, kind, json.loads(js)) for seq, kind, js in rows]


def failures(evs):
    """Each rejected step attempt by why it failed."""
    out = collections.Counter()
    last_eval = {}  # kernel -> the outcome of its latest evaluation that did not pass
    for _, kind, j in evs:
        if kind == "evaluation" and not j.get("passed", False):
            last_eval[j.get("kernel", "")] = j.get("outcome", "?")
        if kind != "rejected":
            continue
        stage = j.get("stage", "?")
        if stage == "proposer":
            s = j.get("summary", "")
            why = "timeout" if "timeout" in s else ("invalid_reply" if "invalid" in s else "call")
            if "edit" in s and "appl" in s:
                why = "edit_not_applied"
            out["proposer:" + why] += 1
        elif stage == "gate":
            out["gate:" + last_eval.get(j.get("kernel", ""), "?")] += 1
        else:
            out[stage] += 1
    return out


def provenance(evs, proposer):
    seen = set()
    for _, kind, j in evs:
        p = j.get("provenance") if kind == "proposal" else None
        if p and p.get("kind") == "llm":
            seen.add("llm:" + p.get("detail", "?"))
    if not seen and " command/" in proposer:  # no proposal answered: the configured model
        seen.add("llm:command/" + proposer.split(" command/", 1)[1].split(" ")[0])
    return ", ".join(sorted(seen)) or "-"


def rows(root):
    for stream in sorted(os.listdir(root)):
        d = os.path.join(root, stream)
        if not os.path.isdir(d):
            continue
        # stream names: STRATEGY-ABLATION-RUN, where STRATEGY itself may hold a dash
        strategy, _, rest = stream.partition("-")
        run = stream.split("-")[-1]
        for known in ("forward-memory", "expert-source"):
            if stream.startswith(known + "-"):
                strategy, rest = known, stream[len(known) + 1:]
                break
        ablation = rest[: -(len(run) + 1)] if rest.endswith("-" + run) else rest
        for f in sorted(os.listdir(d)):
            if not f.endswith(".json"):
                continue
            task = f[:-5]
            try:
                j = json.load(open(os.path.join(d, f)))
            except (OSError, ValueError):
                continue
            if j.get("schema") != "lathe.optimize/1":
                continue
            db = os.path.join(d, "ws-" + task, ".lathe", "lathe.db")
            evs = events(db, j["run"]) if os.path.exists(db) else []
            yield {
                "stream": stream, "strategy": strategy, "ablation": ablation, "run": run, "task": task,
                "best": j.get("best_vs_start"), "final": j.get("final_best_outcome", ""),
                "step_ratio": (j.get("steps") or [{}])[-1].get("ratio") or (j.get("steps") or [{}])[-1].get("first_ratio"), "expert": j.get("expert_vs_start"),
                "gap": j.get("gap_recovered"), "calls": j.get("used", {}).get("calls"),
                "evals": j.get("used", {}).get("evals"), "seconds": j.get("used", {}).get("seconds"),
                "accepted": len(j.get("steps", [])), "failures": failures(evs), "provenance": provenance(evs, j.get("proposer", "")),
                "id": j["run"],
            }


def fmt(x, spec="{:.2f}"):
    return "-" if x is None else spec.format(x)


def main():
    args = sys.argv[1:]
    rows_in, rows_out, roots = [], None, []
    while args:
        a = args.pop(0)
        if a in ("--rows-in", "--rows-out") and args:
            if a == "--rows-in":
                rows_in.append(args.pop(0))
            else:
                rows_out = args.pop(0)
        elif a.startswith("-"):
            sys.exit(__doc__)
        else:
            roots.append(a)
    if len(roots) > 1 or not (roots or rows_in):
        sys.exit(__doc__)
    rs = []
    for f in rows_in:
        for line in open(f):
            if line.strip():
                r = json.loads(line)
                r["failures"] = collections.Counter(r.get("failures", {}))
                rs.append(r)
    fresh = list(rows(roots[0])) if roots else []
    if rows_out:
        with open(rows_out, "w") as f:
            for r in fresh:
                f.write(json.dumps(r) + "\n")
    rs = sorted(rs + fresh, key=lambda r: (r["strategy"], r["ablation"], r["run"], r["task"]))
    print("| strategy | ablation | run | task | best vs naive | expert vs naive | gap recovered | accepted steps "
          "| model calls | evals | wall s | failed attempts by outcome | provenance |")
    print("|---|---|---|---|---|---|---|---|---|---|---|---|---|")
    for r in rs:
        fails = ", ".join(f"{k} {v}" for k, v in sorted(r["failures"].items())) or "-"
        if r["best"] is not None:
            best = fmt(r["best"], "{:.2f}x")
        elif r["accepted"]:  # a step was accepted; the final paired re-measure could not decide
            best = f"{fmt(r['step_ratio'], '{:.2f}x')} at acceptance; final re-measure {r['final'] or 'undecided'}"
        else:
            best = "none accepted (1.00x)"
        print(f"| {r['strategy']} | {r['ablation']} | {r['run']} | {r['task']} | {best} | {fmt(r['expert'], '{:.2f}x')} "
              f"| {fmt(r['gap'], '{:.0%}')} | {r['accepted']} | {r['calls']} | {r['evals']} | {fmt(r['seconds'], '{:.0f}')} "
              f"| {fails} | {r['provenance']} |")
    # Per strategy: the geometric mean of best vs naive over its runs (a run with nothing accepted
    # counts as 1.00x), and the failures added up. A run lost to the model's timeouts (every
    # attempt a proposer timeout, nothing accepted: the model never answered) is left out and
    # counted; its task's re-run (RUN "r1b") stands in for it.
    print()
    print("| strategy | ablation | runs | lost to timeouts (left out) | geomean best vs naive "
          "| mean gap recovered (tasks with an expert) | model calls | failed attempts by outcome |")
    print("|---|---|---|---|---|---|---|---|")
    groups = collections.OrderedDict()
    lost = collections.Counter()
    for r in rs:
        if r["accepted"] == 0 and r["failures"] and set(r["failures"]) == {"proposer:timeout"}:
            lost[(r["strategy"], r["ablation"])] += 1
            continue
        groups.setdefault((r["strategy"], r["ablation"]), []).append(r)
    for (s, a), g in groups.items():
        # A step accepted whose final re-measure was undecided counts at its accepted ratio.
        gm = statistics.geometric_mean([r["best"] or (r["step_ratio"] if r["accepted"] else None) or 1.0 for r in g])
        gaps = [r["gap"] for r in g if r["expert"] is not None and r["gap"] is not None]
        tot = collections.Counter()
        for r in g:
            tot.update(r["failures"])
        fails = ", ".join(f"{k} {v}" for k, v in sorted(tot.items())) or "-"
        print(f"| {s} | {a} | {len(g)} | {lost[(s, a)]} | {gm:.2f}x | {fmt(statistics.mean(gaps) if gaps else None, '{:.0%}')} "
              f"| {sum(r['calls'] or 0 for r in g)} | {fails} |")


if __name__ == "__main__":
    main()
