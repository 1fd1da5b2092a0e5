#!/usr/bin/env python3
"""Per-candidate cost of KernelBench ModelNew candidates through lathe on the CPU (issue 24).
Not a test: it prints numbers for the closing note.

  - `lathe eval PROBLEM CANDIDATE --no-time` (checks only, each a fresh lathe process): cold (a
    fresh workspace: the candidate's build, and for the inline one its extension's compile) and
    cached (the same workspace again), for a PyTorch-only ModelNew and an inline C++ one, with
    the gate's stage times;
  - the same with timing: one paired decision against eager PyTorch (--quick), cached build;
  - a KernelBench-layout suite (3 problems x 2 samples, --check-only): wall time and
    evaluations per hour.

Usage: bench/modelnew_cost.py [--lathe build/lathe] [--out FILE]
"""
import argparse, json, os, subprocess, sys, tempfile, time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
PROBLEM = os.path.join(ROOT, "tests/problems/kb_linear_gelu.py")
CANDIDATES = {"torch": os.path.join(ROOT, "tests/problems/modelnew/linear_gelu_torch.py"),
              "inline_cpp": os.path.join(ROOT, "tests/problems/modelnew/linear_gelu_inline.py")}
SUITE = os.path.join(ROOT, "tests/problems/kernelbench")


def lathe(binary, ws, *args):
    t0 = time.monotonic()
    p = subprocess.run([binary, "--workspace", ws, *args, "--json"], capture_output=True, text=True)
    wall = time.monotonic() - t0
    try:
        return json.loads(p.stdout), wall
    except json.JSONDecodeError:
        sys.exit(f"lathe printed no JSON: {args}\n{p.stderr[-2000:]}")


def stages(e):
    return {s["stage"]: round(s["seconds"], 3) for s in e.get("stage_seconds", [])}


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--lathe", default=os.path.join(ROOT, "build/lathe"))
    ap.add_argument("--out", default="")
    a = ap.parse_args()
    out = {"schema": "lathe.bench.modelnew_cost/1", "date": time.strftime("%Y-%m-%d %H:%M"),
           "machine": os.uname().nodename + f", {os.cpu_count()} cores", "candidates": {}}
    with tempfile.TemporaryDirectory() as tmp:
        for name, cand in CANDIDATES.items():
            ws = os.path.join(tmp, name, ".lathe")
            row = {}
            for kind in ("cold", "cached"):
                e, wall = lathe(a.lathe, ws, "eval", PROBLEM, cand, "--no-time")
                row[kind] = {"outcome": e["outcome"], "wall_s": round(wall, 2), "stages": stages(e)}
            e, wall = lathe(a.lathe, ws, "eval", PROBLEM, cand, "--quick")
            row["timed"] = {"outcome": e["outcome"], "wall_s": round(wall, 2), "stages": stages(e),
                            "ratio_vs_eager": (e.get("paired") or {}).get("ratio"),
                            "median_us": (e.get("median_seconds") or 0) * 1e6,
                            "eager_median_us": (e.get("baseline_median_seconds") or 0) * 1e6}
            out["candidates"][name] = row
            print(name, json.dumps(row), flush=True)
        ws = os.path.join(tmp, "suite", ".lathe")
        t0 = time.monotonic()
        p = subprocess.run([a.lathe, "--workspace", ws, "bench", os.path.join(SUITE, "level1"), "--candidates",
                            os.path.join(SUITE, "samples"), "--check-only", "--json"], capture_output=True, text=True)
        wall = time.monotonic() - t0
        j = json.loads(p.stdout)
        n = sum(len(s["summary"]["tasks"]) for s in j["samples"])
        out["suite"] = {"problems": 3, "samples": len(j["samples"]), "evaluations": n, "wall_s": round(wall, 1),
                        "evaluations_per_hour": round(3600 * n / wall),
                        "best_of_samples_correct": j["best_of_samples"]["correct"]}
        print("suite", json.dumps(out["suite"]), flush=True)
    if a.out:
        with open(a.out, "w") as f:
            json.dump(out, f, indent=2)
            f.write("\n")


if __name__ == "__main__":
    main()
