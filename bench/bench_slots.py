#!/usr/bin/env python3
"""Evaluations per hour of `lathe bench --cpu-slots N` (issue 46 item 1: the slot pool on one host):
a suite of KernelBench-format problems checked only (--check-only), run with one CPU slot (the whole
machine, one evaluation at a time) and with N slots (disjoint cores, an evaluation pinned to each),
alternating 1, N, 1, N, ... so that a drift of the machine's load falls on both; each run in a fresh
copy of a workspace whose build cache a first, uncounted run filled. Paired: the ratio is taken per
round (wall of 1 slot / wall of N slots), then their geometric mean. The verdicts of every run are
compared with the first run's: a slot count that changes one is a failure of the pool, not a speedup.
The stored evaluations are read back for the slot each ran on (the pool must have used every slot).

Usage: bench/bench_slots.py --lathe build/lathe --out bench/results/slots-DATE
       [--suite bench/kernelbench_gpu/level1] [--samples bench/kernelbench_gpu/samples] [--sample 0]
       [--slots 1,2] [--rounds 2]
Writes OUT.json and OUT.md.
"""
import argparse, glob, json, os, shutil, sqlite3, statistics, sys, tempfile, time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from bench_in_flight import ROOT, run_bench  # noqa: E402  (the same checks-only run, another flag)


def slots_used(ws):
    """{slot index or None: evaluations} from the workspace's store (result_json's "slot")."""
    db = sqlite3.connect(os.path.join(ws, ".lathe", "lathe.db"))
    try:
        rows = db.execute("SELECT json_extract(result_json, '$.slot.index'), count(*) FROM evaluations "
                          "GROUP BY 1").fetchall()
    finally:
        db.close()
    return {("none" if k is None else str(k)): n for k, n in rows}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--lathe", default=os.path.join(ROOT, "build/lathe"))
    ap.add_argument("--out", required=True)
    ap.add_argument("--suite", default=os.path.join(ROOT, "bench/kernelbench_gpu/level1"))
    ap.add_argument("--samples", default=os.path.join(ROOT, "bench/kernelbench_gpu/samples"))
    ap.add_argument("--sample", type=int, default=0, help="the sample number used (sample 0: torch ops, runs on a CPU)")
    ap.add_argument("--slots", default="1,2")
    ap.add_argument("--rounds", type=int, default=2)
    a = ap.parse_args()
    counts = [int(w) for w in a.slots.split(",")]
    with tempfile.TemporaryDirectory(prefix="lathe-slots-") as tmp:
        cands = os.path.join(tmp, "samples")
        os.makedirs(cands)
        for f in glob.glob(os.path.join(a.samples, f"level_*_problem_*_sample_{a.sample}_kernel.py")):
            shutil.copy(f, cands)
        suite = os.path.join(tmp, os.path.basename(a.suite.rstrip("/")))  # keeps the levelN name
        shutil.copytree(a.suite, suite)
        warm = os.path.join(tmp, "warm")
        os.makedirs(warm)
        t0 = time.monotonic()
        _, want = run_bench(a.lathe, warm, suite, cands, 1, "--cpu-slots")  # fills the build cache; not counted
        warm_s = time.monotonic() - t0
        runs = []
        for r in range(a.rounds):
            for n in counts:
                ws = os.path.join(tmp, f"ws-{r}-{n}")
                shutil.copytree(warm, ws, symlinks=True)
                warm_rows = slots_used(ws)  # the warm run's rows are in the copy too
                with open("/proc/loadavg") as f:
                    load = f.read().split()[0]
                wall, rows = run_bench(a.lathe, ws, suite, cands, n, "--cpu-slots")
                used = {k: v - warm_rows.get(k, 0) for k, v in slots_used(ws).items() if v - warm_rows.get(k, 0)}
                runs.append({"round": r, "slots": n, "wall_s": round(wall, 2), "evaluations": len(rows),
                             "per_hour": round(len(rows) * 3600 / wall, 1), "load_before": float(load),
                             "same_verdicts": rows == want, "evaluations_per_slot": used})
                print(json.dumps(runs[-1]), flush=True)
                shutil.rmtree(ws, ignore_errors=True)
    base = counts[0]
    ratios = {}
    for n in counts[1:]:
        ratios[n] = [next(x["wall_s"] for x in runs if x["round"] == r and x["slots"] == base) /
                     next(x["wall_s"] for x in runs if x["round"] == r and x["slots"] == n) for r in range(a.rounds)]
    res = {"date": time.strftime("%Y-%m-%d %H:%M"), "machine": f"{os.uname().nodename}, {os.cpu_count()} cores",
           "suite": a.suite, "sample": a.sample, "evaluations": len(want), "warm_run_s": round(warm_s, 1),
           "runs": runs, "throughput_ratio": {str(n): [round(x, 3) for x in v] for n, v in ratios.items()},
           "geomean": {str(n): round(statistics.geometric_mean(v), 3) for n, v in ratios.items()},
           "verdicts_unchanged": all(x["same_verdicts"] for x in runs),
           "correct": sum(1 for _, s, _ in want if s == "correct")}
    with open(a.out + ".json", "w") as f:
        json.dump(res, f, indent=1)
    md = [f"# `lathe bench --cpu-slots` on a checks-only suite, {res['date']}", "",
          f"Machine: {res['machine']}. Suite: {a.suite}, sample {a.sample} of each problem "
          f"({res['evaluations']} evaluations, {res['correct']} correct), --check-only, each run in a fresh copy "
          f"of a workspace whose build cache an uncounted run filled ({res['warm_run_s']} s).", "",
          "| round | CPU slots | wall s | evaluations/hour | load before | verdicts as the first run | evaluations per slot |",
          "|---|---|---|---|---|---|---|"]
    for x in runs:
        per = ", ".join(f"{k}: {v}" for k, v in sorted(x["evaluations_per_slot"].items()))
        md.append(f"| {x['round']} | {x['slots']} | {x['wall_s']} | {x['per_hour']} | {x['load_before']} | "
                  f"{'yes' if x['same_verdicts'] else 'NO'} | {per} |")
    md.append("")
    for n, v in res["throughput_ratio"].items():
        md.append(f"Throughput of {n} slots over {base}, per round (paired): "
                  + ", ".join(f"{x:.2f}x" for x in v) + f"; geometric mean {res['geomean'][n]:.2f}x.")
    with open(a.out + ".md", "w") as f:
        f.write("\n".join(md) + "\n")
    print("\n".join(md))
    return 0 if res["verdicts_unchanged"] else 1


if __name__ == "__main__":
    sys.exit(main())
