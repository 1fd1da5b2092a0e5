#!/usr/bin/env python3
"""Benchmark of the CPU gate (issue 2). Not a test: it prints numbers for the closing note.

Per shipped task (gemm, softmax, conv2d):
  - cold build, cached build and one full evaluation (expert vs naive), from stage_seconds;
  - the A/A spread of that evaluation;
  - the run-to-run spread of the expert/naive ratio over N independent evaluations, each a fresh
    lathe process, in randomized task order;
  - gemm and conv2d experts against their OpenBLAS baselines, each in one paired run;
  - softmax expert's achieved bandwidth against the measured copy bandwidth (shape > LLC).

Usage: bench/cpu_gate.py [--lathe build/lathe] [--runs 10] [--out bench/results/cpu-gate.json]
"""
import argparse, json, os, random, statistics, subprocess, sys, tempfile, time

TASKS = ["gemm", "softmax", "conv2d"]


def lathe(binary, ws, *args):
    cmd = [binary, "--workspace", ws, *args, "--json"]
    p = subprocess.run(cmd, capture_output=True, text=True)
    if not p.stdout.strip():
        sys.exit(f"lathe printed nothing: {' '.join(cmd)}\n{p.stderr}")
    return json.loads(p.stdout)


def stage(e, name):
    for s in e.get("stage_seconds", []):
        if s.get("stage") == name:
            return s.get("seconds")
    return None


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--lathe", default="build/lathe")
    ap.add_argument("--runs", type=int, default=10)
    ap.add_argument("--out", default="bench/results/cpu-gate.json")
    a = ap.parse_args()
    results = {"schema": "lathe.bench.cpu_gate/1", "date": time.strftime("%Y-%m-%d %H:%M"), "tasks": {}}

    for t in TASKS:
        ws = tempfile.mkdtemp(prefix="lathe-bench-")
        t0 = time.time()
        cold = lathe(a.lathe, ws, "eval", t, "expert", "--baseline", "naive")
        cold_wall = time.time() - t0
        t0 = time.time()
        warm = lathe(a.lathe, ws, "eval", t, "expert", "--baseline", "naive")
        warm_wall = time.time() - t0
        r = {
            "outcome": cold["outcome"],
            "cold_compile_s": stage(cold, "compile"),
            "cached_compile_s": stage(warm, "compile"),
            "cold_eval_wall_s": round(cold_wall, 2),
            "cached_eval_wall_s": round(warm_wall, 2),
            "check_s": stage(warm, "check"),
            "time_s": stage(warm, "time"),
            "aa": {k: cold["aa"][k] for k in ("ratio", "ci_low", "ci_high")} if cold.get("aa") else None,
            "expert_over_naive": cold["paired"]["ratio"] if cold.get("paired") else None,
            "target": cold["target"],
        }
        results["tasks"][t] = r
        print(f"{t}: cold compile {r['cold_compile_s']:.2f} s, cached {r['cached_compile_s']:.3f} s, "
              f"eval {cold_wall:.1f} s cold / {warm_wall:.1f} s cached; A/A {r['aa']}", flush=True)

    # Run-to-run spread: fresh processes, randomized order, one shared warm cache.
    ws = tempfile.mkdtemp(prefix="lathe-bench-")
    for t in TASKS:
        lathe(a.lathe, ws, "eval", t, "expert", "--baseline", "naive", "--no-time")
    order = [t for t in TASKS for _ in range(a.runs)]
    random.shuffle(order)
    ratios = {t: [] for t in TASKS}
    for t in order:
        e = lathe(a.lathe, ws, "eval", t, "expert", "--baseline", "naive")
        if e.get("paired"):
            ratios[t].append(e["paired"]["ratio"])
        print(f"  {t} expert/naive {ratios[t][-1] if ratios[t] else e['outcome']:.4g}", flush=True)
    for t in TASKS:
        xs = ratios[t]
        med = statistics.median(xs)
        results["tasks"][t]["ratio_runs"] = xs
        results["tasks"][t]["ratio_median"] = med
        results["tasks"][t]["ratio_range_rel"] = (max(xs) - min(xs)) / med
        results["tasks"][t]["ratio_cv"] = statistics.stdev(xs) / statistics.mean(xs) if len(xs) > 1 else None

    # Experts against the library baselines, on the tasks' timing shapes.
    for t in ("gemm", "conv2d"):
        e = lathe(a.lathe, ws, "eval", t, "expert")
        results["tasks"][t]["vs_library"] = {
            "baseline": e["baseline_name"], "outcome": e["outcome"],
            "speedup": e["paired"]["ratio"] if e.get("paired") else None,
            "ci": [e["paired"]["ci_low"], e["paired"]["ci_high"]] if e.get("paired") else None,
            "expert_s": e.get("median_seconds"), "library_s": e.get("baseline_median_seconds"),
            "roofline_fraction": e.get("roofline_fraction")}

    # Softmax against the measured memory bandwidth, at its timed shape (larger than the LLC).
    e = lathe(a.lathe, ws, "eval", "softmax", "expert", "--baseline", "naive")
    shape = {"large": (4096, 4096)}
    R, C = shape.get(e["timing_shape"], (0, 0))
    if e.get("median_seconds") and R:
        bw = 8.0 * R * C / e["median_seconds"]
        results["tasks"]["softmax"]["bandwidth"] = {
            "shape": [R, C], "bytes": 8 * R * C, "achieved_bytes_per_s": bw,
            "measured_copy_bytes_per_s": e["target"]["copy_bytes_per_s"],
            "fraction": bw / e["target"]["copy_bytes_per_s"]}

    os.makedirs(os.path.dirname(a.out), exist_ok=True)
    with open(a.out, "w") as f:
        json.dump(results, f, indent=2)
    print(json.dumps({t: {k: v for k, v in r.items() if k != "target"} for t, r in results["tasks"].items()}, indent=2))


if __name__ == "__main__":
    main()
