#!/usr/bin/env python3
"""The shipped honest kernels' verdicts through one lathe binary (issue 42: "the shipped honest
kernels' verdicts unchanged", before/after, and "with one core kept busy by a burner process: no
kernel-failure verdict, only ok or unstable"). Not a test: it prints a table for the closing note.

Every kernel of every CPU task under tasks/ is evaluated against the task's baseline (the baseline
against itself too) with `lathe eval --json`, one lathe process per evaluation, tasks in the order
given. With --burn N, N processes spin on the CPU for the whole run (a loaded machine).

Usage: bench/gate/verdicts.py [--lathe build/lathe] [--checkout .] [--burn 0] [--max-time 3]
                              [--out FILE.json] [--label TEXT] [task …]
Compare two runs: bench/gate/verdicts.py --compare before.json after.json [more.json …]
"""
import argparse, json, multiprocessing, os, subprocess, sys, tempfile, time

# Verdicts that blame the kernel (core/outcome.h): all but ok, unstable (correct, speed left open
# by the machine), infra_error (lathe's own failure) and unsupported_target.
KERNEL_FAILURES = {"forbidden", "compile_error", "load_error", "launch_error", "crash", "timeout",
                   "resource_limit", "wrong_result", "nan_or_inf", "input_mutated", "unwritten_output",
                   "cached_output", "suspicious_speed"}


def spin():
    while True:
        pass


def cpu_tasks(checkout):
    root = os.path.join(checkout, "tasks")
    return sorted(t for t in os.listdir(root) if not t.endswith("_cuda")
                  and os.path.isfile(os.path.join(root, t, "task.toml")))


def kernels(checkout, task):
    return sorted(os.listdir(os.path.join(checkout, "tasks", task, "kernels")))


def evaluate(a, ws, task, kernel):
    cmd = [a.lathe, "--workspace", ws, "eval", os.path.join(a.checkout, "tasks", task), kernel,
           "--json", "--max-time", str(a.max_time)]
    t0 = time.time()
    p = subprocess.run(cmd, capture_output=True, text=True)
    row = {"task": task, "kernel": kernel, "exit": p.returncode, "seconds": round(time.time() - t0, 1)}
    try:
        e = json.loads(p.stdout)
    except json.JSONDecodeError:
        row.update(outcome="(no JSON)", message=(p.stderr or p.stdout)[-300:])
        return row
    pr = e.get("paired") or {}
    row.update(outcome=e.get("outcome"), baseline=e.get("baseline_name"), decision=e.get("decision"),
               ratio=pr.get("ratio"), ci_low=pr.get("ci_low"), ci_high=pr.get("ci_high"),
               message=(e.get("message") or "")[:200])
    return row


def fmt_ratio(r):
    if r.get("ratio") is None:
        return "-"
    return f"{r['ratio']:.3f} [{r['ci_low']:.3f}, {r['ci_high']:.3f}]"


def compare(files):
    runs = [json.load(open(f)) for f in files]
    keys = []
    for run in runs:
        for r in run["rows"]:
            if (r["task"], r["kernel"]) not in keys:
                keys.append((r["task"], r["kernel"]))
    print("| task | kernel | " + " | ".join(run["label"] for run in runs) + " |")
    print("|---|---|" + "---|" * len(runs))
    for k in keys:
        cells = []
        for run in runs:
            r = next((x for x in run["rows"] if (x["task"], x["kernel"]) == k), None)
            cells.append("-" if r is None else f"{r['outcome']}, {r.get('decision') or '-'}, {fmt_ratio(r)}")
        print(f"| {k[0]} | {k[1]} | " + " | ".join(cells) + " |")
    for run in runs:
        bad = [r for r in run["rows"] if r["outcome"] in KERNEL_FAILURES]
        print(f"\n{run['label']}: {len(run['rows'])} evaluations, {len(bad)} kernel-failure verdicts"
              f"{': ' + ', '.join(r['task'] + '/' + r['kernel'] + ' ' + r['outcome'] for r in bad) if bad else ''};"
              f" burners {run['burn']}, load before {run['load_before']}, wall {run['wall_s']} s")


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--lathe", default="build/lathe")
    ap.add_argument("--checkout", default=".", help="the checkout whose tasks/ are evaluated")
    ap.add_argument("--burn", type=int, default=0, help="processes spinning on the CPU meanwhile")
    ap.add_argument("--max-time", type=float, default=3)
    ap.add_argument("--out")
    ap.add_argument("--label", default="")
    ap.add_argument("--compare", nargs="+", metavar="RUN.json")
    ap.add_argument("tasks", nargs="*")
    a = ap.parse_args()
    if a.compare:
        return compare(a.compare)
    a.lathe = os.path.abspath(a.lathe)
    tasks = a.tasks or cpu_tasks(a.checkout)
    burners = [multiprocessing.Process(target=spin, daemon=True) for _ in range(a.burn)]
    for b in burners:
        b.start()
    run = {"schema": "lathe.bench.verdicts/1", "label": a.label or a.lathe, "lathe": a.lathe,
           "burn": a.burn, "max_time": a.max_time, "date": time.strftime("%Y-%m-%d %H:%M"),
           "load_before": round(os.getloadavg()[0], 2), "rows": []}
    t0 = time.time()
    try:
        with tempfile.TemporaryDirectory(prefix="lathe-verdicts-") as ws:
            for t in tasks:
                for k in kernels(a.checkout, t):
                    r = evaluate(a, ws, t, k)
                    run["rows"].append(r)
                    print(f"{t}/{k}: {r['outcome']} {r.get('decision') or ''} {fmt_ratio(r)} ({r['seconds']} s)"
                          + (f"  {r['message'][:120]}" if r["outcome"] != "ok" else ""), flush=True)
    finally:
        for b in burners:
            b.terminate()
    run["wall_s"] = round(time.time() - t0)
    if a.out:
        with open(a.out, "w") as f:
            json.dump(run, f, indent=1)
    bad = [r for r in run["rows"] if r["outcome"] in KERNEL_FAILURES]
    print(f"{len(run['rows'])} evaluations, {len(bad)} kernel-failure verdicts, {run['wall_s']} s")


if __name__ == "__main__":
    sys.exit(main())
