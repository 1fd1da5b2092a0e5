#!/usr/bin/env python3
"""`lathe tune`'s strategies compared (issues 45, 48). Not a test: it prints numbers for the closing
note and writes them as JSON and Markdown (again after each kernel, so that a run cut short keeps
what it measured).

For each kernel of a set (`--set cpu`: bench/tune/*, tunable bundles of shipped CPU tasks;
`--set cuda`: bench/tune/cuda/*, of shipped CUDA tasks, for the GPU machine's `tune` phase of
scripts/gpu-run):

  1. the whole space measured through the real gate, once in full (`--strategy exhaustive
     --max-time M`) and once quickly (`--quick --max-time M/4`, what halving's first rung uses):
     wall time, configurations timed, evaluations per hour, the optimum (the highest paired
     speedup over the default among configurations that passed);
  2. each strategy (random, model, halving; exhaustive as the order it walks) replayed from
     those measurements (`--simulate`: kernel_tuner's simulation mode, no timing) for several
     budgets and seeds: the best speedup it found as a fraction of the optimum, and a score
     against random search, (f - f_random) / (1 - f_random) per budget (0: random search's
     mean, 1: the optimum every time), as kernel_tuner's 2024 methodology scores strategies
     against random sampling.

Usage: bench/tune/strategies.py [--set cpu|cuda] [--lathe build/lathe] [--max-time 1] [--seeds 10]
       [--budgets 4,8,12,16] [--only KERNEL,...] [--out bench/results/tune-strategies-DATE]
"""
import argparse, json, os, statistics, subprocess, sys, tempfile, time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
KERNEL_SETS = {
    "cpu": [("gemm", "gemm_tiled"), ("row_mean", "row_mean_acc"), ("silu", "silu_chunk")],
    "cuda": [("softmax_cuda", "cuda/softmax_block"), ("reduction_cuda", "cuda/rowsum_block"),
             ("gemm_cuda", "cuda/gemm_tiles")],
}


def tune(binary, ws, task, kernel, *args):
    cmd = [binary, "--workspace", ws, "tune", os.path.join(ROOT, "tasks", task), os.path.join(HERE, kernel),
           "--json", "--quiet", *args]
    t0 = time.monotonic()
    p = subprocess.run(cmd, capture_output=True, text=True)
    wall = time.monotonic() - t0
    if p.returncode != 0:
        raise RuntimeError(f"lathe tune failed ({' '.join(args)}): {p.stderr[-2000:]}")
    return json.loads(p.stdout), wall


def best_of(result):
    """The highest speedup among full measurements that passed (what `best` is), 1 for none."""
    b = result.get("best")
    return max(1.0, b["speedup"]) if b else 1.0


def write(report, a, budgets):
    """The JSON and the Markdown of what was measured so far."""
    os.makedirs(os.path.dirname(a.out) or ".", exist_ok=True)
    with open(a.out + ".json", "w") as f:
        json.dump(report, f, indent=2)
    lines = [f"# `lathe tune` strategies on {report['set'].upper()} kernels ({time.strftime('%Y-%m-%d')}, {report['machine']})", "",
             f"`bench/tune/strategies.py --set {a.set} --max-time {a.max_time} --seeds {a.seeds} --budgets {a.budgets}`. "
             "Each space measured once through the real gate (full, and quick for halving's first rung); the "
             "strategies replayed from those measurements (`--simulate`). fraction = best speedup found / the "
             "space's best; score = (fraction - random's) / (1 - random's).", ""]
    for k in report["kernels"]:
        lines += [f"## {k['kernel']} on tasks/{k['task']}: {k['admitted']} configurations ({k['refused']} refused)", "",
                  f"- full exhaustive: {k['full']['wall_s']:.0f} s, {k['full']['timed']} timed, "
                  f"{k['full']['evals_per_hour']:.0f} evaluations/hour; outcomes {k['full']['outcomes']}",
                  f"- quick exhaustive: {k['quick']['wall_s']:.0f} s, {k['quick']['evals_per_hour']:.0f} evaluations/hour",
                  f"- optimum {k['optimum']:.3f}x over the default ({json.dumps(k['full']['best']['config']) if k['full']['best'] else '-'}); "
                  f"crown {json.dumps(k['full']['crown'])}", "",
                  "| strategy | " + " | ".join(f"budget {b}" for b in budgets) + " |",
                  "|---|" + "---|" * len(budgets)]
        for strategy, rows in k["strategies"].items():
            cells = [f"{r['mean_fraction']:.3f} (min {r['min_fraction']:.2f}, opt {r['found_optimum']}/{r['runs']}, "
                     f"score {r.get('score_vs_random', 0.0):+.2f})" for r in rows]
            lines.append(f"| {strategy} | " + " | ".join(cells) + " |")
        if not k["strategies"]:
            lines.append("| (not replayed yet) |" + " |" * len(budgets))
        lines.append("")
    for e in report.get("failed", []):
        lines += [f"## {e['kernel']} on tasks/{e['task']}: failed", "", "```", e["error"], "```", ""]
    with open(a.out + ".md", "w") as f:
        f.write("\n".join(lines) + "\n")


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--set", choices=sorted(KERNEL_SETS), default="cpu")
    ap.add_argument("--lathe", default=os.path.join(ROOT, "build/lathe"))
    ap.add_argument("--max-time", type=float, default=1.0)
    ap.add_argument("--seeds", type=int, default=10)
    ap.add_argument("--budgets", default="4,8,12,16")
    ap.add_argument("--only", default="", help="comma-separated kernel names")
    ap.add_argument("--out", default=os.path.join(ROOT, "bench/results/tune-strategies-" + time.strftime("%Y-%m-%d")))
    a = ap.parse_args()
    budgets = [int(b) for b in a.budgets.split(",")]
    ws = tempfile.mkdtemp(prefix="lathe-tune-bench-")
    os.makedirs(os.path.join(ws, ".lathe"))
    full = ["--max-time", str(a.max_time)]
    report = {"set": a.set, "machine": os.uname().nodename, "lathe": a.lathe, "max_time": a.max_time, "seeds": a.seeds,
              "budgets": budgets, "kernels": []}
    # Every space is measured first (what needs the machine's time), then replayed: a run cut short
    # keeps its measurements.
    for task, kernel in KERNEL_SETS[a.set]:
        if a.only and os.path.basename(kernel) not in a.only.split(","):
            continue
        try:
            print(f"… {kernel} on {task}: the whole space, in full", file=sys.stderr)
            ex, ex_wall = tune(a.lathe, ws, task, kernel, "--strategy", "exhaustive", *full)
            print(f"… {kernel}: the whole space, quickly", file=sys.stderr)
            qx, q_wall = tune(a.lathe, ws, task, kernel, "--strategy", "exhaustive", "--quick", "--max-time",
                              str(a.max_time / 4))
        except RuntimeError as e:
            report["failed"] = report.get("failed", []) + [{"task": task, "kernel": kernel, "error": str(e)}]
            print(f"… {kernel}: {e}", file=sys.stderr)
            write(report, a, budgets)
            continue
        k = {"task": task, "kernel": kernel, "admitted": ex["admitted"], "refused": ex["refused"],
             "full": {"wall_s": ex_wall, "timed": ex["timed"], "evals_per_hour": 3600 * ex["timed"] / ex_wall,
                      "outcomes": {}, "best": ex.get("best"), "crown": ex.get("crown"), "winner": ex["winner"],
                      "points": ex["points"]},
             "quick": {"wall_s": q_wall, "timed": qx["timed"], "evals_per_hour": 3600 * qx["timed"] / q_wall,
                       "best": qx.get("best")},
             "optimum": best_of(ex), "strategies": {}}
        for p in ex["points"]:
            k["full"]["outcomes"][p["outcome"]] = k["full"]["outcomes"].get(p["outcome"], 0) + 1
        report["kernels"].append(k)
        print(json.dumps({"kernel": kernel, "optimum": k["optimum"], "full_wall_s": round(ex_wall, 1)}), file=sys.stderr)
        write(report, a, budgets)
    for k in report["kernels"]:
        for strategy in ["exhaustive", "random", "model", "halving"]:
            rows = []
            for budget in budgets:
                fractions = []
                for seed in range(1, (1 if strategy == "exhaustive" else a.seeds) + 1):
                    r, _ = tune(a.lathe, ws, k["task"], k["kernel"], "--simulate", "--strategy", strategy, "--evals",
                                str(budget), "--seed", str(seed), *full)
                    fractions.append(best_of(r) / k["optimum"])
                rows.append({"budget": budget, "mean_fraction": statistics.mean(fractions),
                             "min_fraction": min(fractions), "found_optimum": sum(f >= 0.999 for f in fractions),
                             "runs": len(fractions)})
            k["strategies"][strategy] = rows
        for strategy, rows in k["strategies"].items():
            for row, rnd in zip(rows, k["strategies"]["random"]):
                f0 = rnd["mean_fraction"]
                row["score_vs_random"] = (row["mean_fraction"] - f0) / (1 - f0) if f0 < 1 else 0.0
        write(report, a, budgets)
    print(open(a.out + ".md").read() if os.path.exists(a.out + ".md") else "no kernel measured")


if __name__ == "__main__":
    main()
