#!/usr/bin/env python3
"""Evaluations per hour of `lathe bench` with more than one evaluation at once, for the flag given:
`--flag in-flight` measures `--in-flight N` (issue 46, item 1's first step: N evaluations at once,
unpinned), `--flag cpu-slots` measures `--cpu-slots N` (issue 46 item 1: the slot pool on one host,
disjoint cores, an evaluation pinned to each). A suite of KernelBench-format problems checked only
(--check-only: no timing, so no lock held exclusive), run with each count in turn, alternating
(1, N, 1, N, ...) so that a drift of the machine's load falls on both; each run in a fresh copy of
a workspace whose build cache a first, uncounted run filled (what is measured is the gate's checks,
not the compiler). Paired: the ratio is taken per round (wall of the first count / wall of N), then
their geometric mean. The verdicts of every run are compared with the first run's: a count that
changes one is a failure of the pool, not a speedup. With cpu-slots, the stored evaluations are
read back for the slot each ran on (the pool must have used every slot).

Usage: bench/bench_parallel.py --flag in-flight|cpu-slots --lathe build/lathe --out bench/results/NAME-DATE
       [--suite bench/kernelbench_gpu/level1] [--samples bench/kernelbench_gpu/samples] [--sample 0]
       [--counts 1,2 (also --widths, --slots)] [--rounds 2]
Writes OUT.json and OUT.md.
"""
import argparse, glob, json, os, shutil, sqlite3, statistics, subprocess, sys, tempfile, time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

# What each measured flag's runs and report are called (the reports as the two scripts this one
# replaced wrote them: bench/results/in-flight-*.md, slots-*.md).
MODES = {
    "in-flight": {"key": "width", "column": "in flight", "unit": "in flight", "same": "verdicts as width 1",
                  "per_slot": False},
    "cpu-slots": {"key": "slots", "column": "CPU slots", "unit": "slots", "same": "verdicts as the first run",
                  "per_slot": True},
}


def run_bench(lathe, ws, suite, cands, count, flag):
    """One checks-only bench run with `--<flag> count`: its wall seconds and (task, status, outcome) rows."""
    cmd = [lathe, "--workspace", ws, "bench", suite, "--candidates", cands, "--check-only", "--json",
           "--" + flag, str(count)]
    t0 = time.monotonic()
    p = subprocess.run(cmd, capture_output=True, text=True)
    wall = time.monotonic() - t0
    if p.returncode != 0:
        sys.exit(f"lathe bench failed ({p.returncode}): {p.stderr[-2000:]}")
    j = json.loads(p.stdout)
    rows = [(r["task"], r["status"], r.get("outcome", "")) for s in j["samples"] for r in s["summary"]["tasks"]]
    return wall, rows


def slots_used(ws):
    """{slot index or None: evaluations} from the workspace's store (result_json's "slot")."""
    db = sqlite3.connect(os.path.join(ws, ".lathe", "lathe.db"))
    try:
        rows = db.execute("SELECT json_extract(result_json, '$.slot.index'), count(*) FROM evaluations "
                          "GROUP BY 1").fetchall()
    finally:
        db.close()
    return {("none" if k is None else str(k)): n for k, n in rows}


def measure(a, mode, counts):
    """The warm run's verdicts and seconds, and one record per (round, count)."""
    with tempfile.TemporaryDirectory(prefix=f"lathe-{a.flag}-") as tmp:
        cands = os.path.join(tmp, "samples")
        os.makedirs(cands)
        for f in glob.glob(os.path.join(a.samples, f"level_*_problem_*_sample_{a.sample}_kernel.py")):
            shutil.copy(f, cands)
        suite = os.path.join(tmp, os.path.basename(a.suite.rstrip("/")))  # keeps the levelN name
        shutil.copytree(a.suite, suite)
        warm = os.path.join(tmp, "warm")
        os.makedirs(warm)
        t0 = time.monotonic()
        _, want = run_bench(a.lathe, warm, suite, cands, 1, a.flag)  # fills the build cache; not counted
        warm_s = time.monotonic() - t0
        runs = []
        for r in range(a.rounds):
            for n in counts:
                ws = os.path.join(tmp, f"ws-{r}-{n}")
                shutil.copytree(warm, ws, symlinks=True)
                warm_rows = slots_used(ws) if mode["per_slot"] else {}  # the warm run's rows are in the copy too
                with open("/proc/loadavg") as f:
                    load = f.read().split()[0]
                wall, rows = run_bench(a.lathe, ws, suite, cands, n, a.flag)
                run = {"round": r, mode["key"]: n, "wall_s": round(wall, 2), "evaluations": len(rows),
                       "per_hour": round(len(rows) * 3600 / wall, 1), "load_before": float(load),
                       "same_verdicts": rows == want}
                if mode["per_slot"]:
                    run["evaluations_per_slot"] = {k: v - warm_rows.get(k, 0) for k, v in slots_used(ws).items()
                                                   if v - warm_rows.get(k, 0)}
                runs.append(run)
                print(json.dumps(run), flush=True)
                shutil.rmtree(ws, ignore_errors=True)
    return want, warm_s, runs


def report(a, mode, counts, want, warm_s, runs):
    key, base = mode["key"], counts[0]
    ratios = {n: [next(x["wall_s"] for x in runs if x["round"] == r and x[key] == base) /
                  next(x["wall_s"] for x in runs if x["round"] == r and x[key] == n) for r in range(a.rounds)]
              for n in counts[1:]}
    res = {"date": time.strftime("%Y-%m-%d %H:%M"), "machine": f"{os.uname().nodename}, {os.cpu_count()} cores",
           "flag": "--" + a.flag, "suite": a.suite, "sample": a.sample, "evaluations": len(want),
           "warm_run_s": round(warm_s, 1), "runs": runs,
           "throughput_ratio": {str(n): [round(x, 3) for x in v] for n, v in ratios.items()},
           "geomean": {str(n): round(statistics.geometric_mean(v), 3) for n, v in ratios.items()},
           "verdicts_unchanged": all(x["same_verdicts"] for x in runs),
           "correct": sum(1 for _, s, _ in want if s == "correct")}
    per_slot = mode["per_slot"]
    md = [f"# `lathe bench --{a.flag}` on a checks-only suite, {res['date']}", "",
          f"Machine: {res['machine']}. Suite: {a.suite}, sample {a.sample} of each problem "
          f"({res['evaluations']} evaluations, {res['correct']} correct), --check-only, each run in a fresh copy "
          f"of a workspace whose build cache an uncounted run filled ({res['warm_run_s']} s).", "",
          f"| round | {mode['column']} | wall s | evaluations/hour | load before | {mode['same']} |"
          + (" evaluations per slot |" if per_slot else ""),
          "|---|---|---|---|---|---|" + ("---|" if per_slot else "")]
    for x in runs:
        row = (f"| {x['round']} | {x[key]} | {x['wall_s']} | {x['per_hour']} | {x['load_before']} | "
               f"{'yes' if x['same_verdicts'] else 'NO'} |")
        if per_slot:
            row += " " + ", ".join(f"{k}: {v}" for k, v in sorted(x["evaluations_per_slot"].items())) + " |"
        md.append(row)
    md.append("")
    for n, v in res["throughput_ratio"].items():
        md.append(f"Throughput of {n} {mode['unit']} over {base}, per round (paired): "
                  + ", ".join(f"{x:.2f}x" for x in v) + f"; geometric mean {res['geomean'][n]:.2f}x.")
    with open(a.out + ".json", "w") as f:
        json.dump(res, f, indent=1)
    with open(a.out + ".md", "w") as f:
        f.write("\n".join(md) + "\n")
    print("\n".join(md))
    return res


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--flag", required=True, choices=sorted(MODES), help="the bench option measured")
    ap.add_argument("--lathe", default=os.path.join(ROOT, "build/lathe"))
    ap.add_argument("--out", required=True)
    ap.add_argument("--suite", default=os.path.join(ROOT, "bench/kernelbench_gpu/level1"))
    ap.add_argument("--samples", default=os.path.join(ROOT, "bench/kernelbench_gpu/samples"))
    ap.add_argument("--sample", type=int, default=0, help="the sample number used (sample 0: torch ops, runs on a CPU)")
    ap.add_argument("--counts", "--widths", "--slots", default="1,2", help="the flag's values, the first the base")
    ap.add_argument("--rounds", type=int, default=2)
    a = ap.parse_args()
    mode = MODES[a.flag]
    counts = [int(n) for n in a.counts.split(",")]
    want, warm_s, runs = measure(a, mode, counts)
    res = report(a, mode, counts, want, warm_s, runs)
    return 0 if res["verdicts_unchanged"] else 1


if __name__ == "__main__":
    sys.exit(main())
