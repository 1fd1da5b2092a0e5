#!/usr/bin/env python3
"""Evaluations per hour of `lathe bench --in-flight N` (issue 46, item 1's first step): a suite of
KernelBench-format problems checked only (--check-only: no timing, so no lock held exclusive), run
with one evaluation at a time and with several, alternating (1, N, 1, N, ...) so that a drift of
the machine's load falls on both; each run in a fresh copy of a workspace whose build cache a first,
uncounted run filled (what is measured is the gate's checks, not the compiler). The verdicts of every
run are compared: a width that changes one is a failure of the pool, not a speedup.

Usage: bench/bench_in_flight.py --lathe build/lathe --out bench/results/in-flight-DATE
       [--suite bench/kernelbench_gpu/level1] [--samples bench/kernelbench_gpu/samples] [--sample 0]
       [--widths 1,2] [--rounds 2]
Writes OUT.json and OUT.md.
"""
import argparse, glob, json, os, shutil, statistics, subprocess, sys, tempfile, time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def run_bench(lathe, ws, suite, cands, width, flag="--in-flight"):
    """One checks-only bench run with `flag width` (bench_slots.py passes --cpu-slots)."""
    cmd = [lathe, "--workspace", ws, "bench", suite, "--candidates", cands, "--check-only", "--json",
           flag, str(width)]
    t0 = time.monotonic()
    p = subprocess.run(cmd, capture_output=True, text=True)
    wall = time.monotonic() - t0
    if p.returncode != 0:
        sys.exit(f"lathe bench failed ({p.returncode}): {p.stderr[-2000:]}")
    j = json.loads(p.stdout)
    rows = [(r["task"], r["status"], r.get("outcome", "")) for s in j["samples"] for r in s["summary"]["tasks"]]
    return wall, rows


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--lathe", default=os.path.join(ROOT, "build/lathe"))
    ap.add_argument("--out", required=True)
    ap.add_argument("--suite", default=os.path.join(ROOT, "bench/kernelbench_gpu/level1"))
    ap.add_argument("--samples", default=os.path.join(ROOT, "bench/kernelbench_gpu/samples"))
    ap.add_argument("--sample", type=int, default=0, help="the sample number used (sample 0: torch ops, runs on a CPU)")
    ap.add_argument("--widths", default="1,2")
    ap.add_argument("--rounds", type=int, default=2)
    a = ap.parse_args()
    widths = [int(w) for w in a.widths.split(",")]
    with tempfile.TemporaryDirectory(prefix="lathe-in-flight-") as tmp:
        cands = os.path.join(tmp, "samples")
        os.makedirs(cands)
        for f in glob.glob(os.path.join(a.samples, f"level_*_problem_*_sample_{a.sample}_kernel.py")):
            shutil.copy(f, cands)
        suite = os.path.join(tmp, os.path.basename(a.suite.rstrip("/")))  # keeps the levelN name
        shutil.copytree(a.suite, suite)
        warm = os.path.join(tmp, "warm")
        os.makedirs(warm)
        t0 = time.monotonic()
        _, want = run_bench(a.lathe, warm, suite, cands, 1)  # fills the build cache; not counted
        warm_s = time.monotonic() - t0
        runs = []
        for r in range(a.rounds):
            for w in widths:
                ws = os.path.join(tmp, f"ws-{r}-{w}")
                shutil.copytree(warm, ws, symlinks=True)
                with open("/proc/loadavg") as f:
                    load = f.read().split()[0]
                wall, rows = run_bench(a.lathe, ws, suite, cands, w)
                runs.append({"round": r, "width": w, "wall_s": round(wall, 2), "evaluations": len(rows),
                             "per_hour": round(len(rows) * 3600 / wall, 1), "load_before": float(load),
                             "same_verdicts": rows == want})
                print(json.dumps(runs[-1]), flush=True)
                shutil.rmtree(ws, ignore_errors=True)
    ratios = {}
    for w in widths[1:]:
        ratios[w] = [next(x["wall_s"] for x in runs if x["round"] == r and x["width"] == widths[0]) /
                     next(x["wall_s"] for x in runs if x["round"] == r and x["width"] == w) for r in range(a.rounds)]
    res = {"date": time.strftime("%Y-%m-%d %H:%M"), "machine": f"{os.uname().nodename}, {os.cpu_count()} cores",
           "suite": a.suite, "sample": a.sample, "evaluations": len(want), "warm_run_s": round(warm_s, 1),
           "runs": runs, "throughput_ratio": {str(w): [round(x, 3) for x in v] for w, v in ratios.items()},
           "verdicts_unchanged": all(x["same_verdicts"] for x in runs),
           "correct": sum(1 for _, s, _ in want if s == "correct")}
    with open(a.out + ".json", "w") as f:
        json.dump(res, f, indent=1)
    md = [f"# `lathe bench --in-flight` on a checks-only suite, {res['date']}", "",
          f"Machine: {res['machine']}. Suite: {a.suite}, sample {a.sample} of each problem "
          f"({res['evaluations']} evaluations, {res['correct']} correct), --check-only, each run in a fresh copy "
          f"of a workspace whose build cache an uncounted run filled ({res['warm_run_s']} s).", "",
          "| round | in flight | wall s | evaluations/hour | load before | verdicts as width 1 |",
          "|---|---|---|---|---|---|"]
    for x in runs:
        md.append(f"| {x['round']} | {x['width']} | {x['wall_s']} | {x['per_hour']} | {x['load_before']} | "
                  f"{'yes' if x['same_verdicts'] else 'NO'} |")
    md.append("")
    for w, v in res["throughput_ratio"].items():
        md.append(f"Throughput of {w} in flight over 1, per round (paired): "
                  + ", ".join(f"{x:.2f}x" for x in v) + f"; geometric mean {statistics.geometric_mean(v):.2f}x.")
    with open(a.out + ".md", "w") as f:
        f.write("\n".join(md) + "\n")
    print("\n".join(md))
    return 0 if res["verdicts_unchanged"] else 1


if __name__ == "__main__":
    sys.exit(main())
