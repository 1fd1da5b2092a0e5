#!/usr/bin/env python3
"""Run-to-run stability of the CUDA gate's decision (issue 3). Not a test: it prints numbers for
the closing note and writes them as JSON.

Ratio mode (default): N independent `lathe eval TASK KERNEL --json` runs, each a fresh lathe
process, in randomized order (several --kernel options interleave), all against the same
baseline. Per kernel: every ratio (baseline time / kernel time) with its 95% CI, the median,
min/max, the relative spread (max - min) / median and the coefficient of variation (stdev / mean)
of the ratios, and the same figures for the kernel's absolute median time.

A/A mode (--aa): the baseline against itself. Its bundle is copied into a temporary directory
under another name and evaluated as the candidate, N times. The copy has the baseline's content
hash, so lathe gives it the baseline's screening role (a cuBLAS baseline stays legal) and the
build cache's object; it still runs in its own worker processes, as any candidate does. The
false-acceptance rate is the fraction of runs the gate would call the copy faster: ratio CI low
> 1 + epsilon, with epsilon = max(floor, e^(3 s) - 1), s = the run's own A/A spread
max(|ln ci_low|, |ln ci_high|) (src/gate/paired.cpp, decision_epsilon; floor 0.05 as in
src/cli/eval_cmd.cpp unless --epsilon-floor says otherwise). Also shown: the rate by the CLI's
point rule (ratio > 1 + epsilon), the rate of runs called slower, and the rates at other floors.

Workspaces: --workspace-mode shared (default) uses one temporary workspace whose build cache is
warmed first (one --no-time evaluation per kernel), so runs differ only in timing; fresh gives
every run an empty workspace (cold build cache each time).

Usage:
  bench/gpu_stability.py --lathe build/lathe --task gemm_cuda --kernel expert [--kernel stage4_mma]
                         [--baseline cublas] [--runs 10] [--out FILE.json]
  bench/gpu_stability.py --lathe build/lathe --task relu_cuda --aa [--baseline naive] [--runs 10]
Extra arguments for every `lathe eval` go after --lathe-arg (repeatable), e.g.
  --lathe-arg=--max-time --lathe-arg=5
"""
import argparse, json, math, os, random, re, shutil, statistics, subprocess, sys, tempfile, time


def run_eval(binary, ws, task, kernel, baseline, extra, timeout):
    cmd = [binary, "--workspace", ws, "eval", task, kernel, "--json"]
    if baseline:
        cmd += ["--baseline", baseline]
    cmd += extra
    t0 = time.monotonic()
    p = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)
    wall = time.monotonic() - t0
    if not p.stdout.strip():
        sys.exit(f"lathe printed nothing (exit {p.returncode}): {' '.join(cmd)}\n{p.stderr}")
    e = json.loads(p.stdout)
    e["_wall_s"] = wall
    return e


def task_dir(task, binary, tasks_dir):
    """The task's directory: a path as given, else <tasks-dir>/<name>, else next to the binary."""
    if os.path.isdir(task):
        return os.path.abspath(task)
    if task.endswith(".toml") and os.path.isfile(task):
        return os.path.dirname(os.path.abspath(task))
    candidates = [os.path.join(tasks_dir, task)] if tasks_dir else []
    here = os.path.dirname(os.path.abspath(binary))
    candidates += [os.path.join(here, "..", "tasks", task), os.path.join(here, "tasks", task),
                   os.path.join(os.getcwd(), "tasks", task)]
    for c in candidates:
        if os.path.isfile(os.path.join(c, "task.toml")):
            return os.path.abspath(c)
    sys.exit(f"cannot find task '{task}' (looked in {', '.join(candidates)}); pass --tasks-dir")


def task_baseline(tdir):
    with open(os.path.join(tdir, "task.toml")) as f:
        m = re.search(r'^\s*baseline\s*=\s*"([^"]+)"', f.read(), re.M)
    return m.group(1) if m else "naive"


def copy_bundle(tdir, name, dest_root):
    """Copies kernels/<name> (a directory or a bare .cu/.cpp/.cc file) under another name."""
    src = os.path.join(tdir, "kernels", name)
    if os.path.isdir(src):
        dst = os.path.join(dest_root, f"aa_copy_of_{name}")
        shutil.copytree(src, dst)
        return dst
    for ext in (".cu", ".cpp", ".cc"):
        if os.path.isfile(src + ext):
            dst = os.path.join(dest_root, f"aa_copy_of_{name}{ext}")
            shutil.copyfile(src + ext, dst)
            return dst
    sys.exit(f"no kernel bundle '{name}' in {os.path.join(tdir, 'kernels')}")


def decision_epsilon(aa, floor):
    """src/gate/paired.cpp decision_epsilon: max(floor, e^(3 s) - 1), s the A/A spread in log space."""
    spread = 0.0
    if aa:
        lo, hi = aa.get("ci_low"), aa.get("ci_high")
        if len(aa.get("a_seconds") or []) >= 2 and hi is not None and lo is not None \
                and math.isfinite(hi) and lo > 0:
            spread = max(abs(math.log(hi)), abs(math.log(lo)))
    return max(floor, math.expm1(3 * spread))


def eps_for(r, floor):
    """The decision epsilon of a run record (its own A/A interval) with a given floor."""
    aa = r.get("aa")
    if not aa:
        return floor
    return decision_epsilon({"ci_low": aa["ci"][0], "ci_high": aa["ci"][1],
                             "a_seconds": [0] * aa["rounds"]}, floor)


def spread_stats(xs):
    if not xs:
        return None
    med = statistics.median(xs)
    mean = statistics.mean(xs)
    return {"n": len(xs), "median": med, "min": min(xs), "max": max(xs),
            "rel_spread": (max(xs) - min(xs)) / med if med else None,
            "cv": statistics.stdev(xs) / mean if len(xs) > 1 and mean else None}


def run_record(e):
    p, aa = e.get("paired"), e.get("aa")
    return {"outcome": e.get("outcome"), "message": e.get("message"),
            "ratio": p.get("ratio") if p else None,
            "ci": [p.get("ci_low"), p.get("ci_high")] if p else None,
            "rounds": len(p.get("a_seconds") or []) if p else None,
            "stop_reason": p.get("stop_reason") if p else None,
            "method": [p.get("a_method"), p.get("b_method")] if p else None,
            "median_s": e.get("median_seconds"), "baseline_median_s": e.get("baseline_median_seconds"),
            "aa": {"ratio": aa.get("ratio"), "ci": [aa.get("ci_low"), aa.get("ci_high")],
                   "rounds": len(aa.get("a_seconds") or [])} if aa else None,
            "wall_s": round(e["_wall_s"], 2),
            "stage_seconds": e.get("stage_seconds")}


def fmt(x, spec=".4f"):
    return "n/a" if x is None else format(x, spec)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--lathe", default="build/lathe")
    ap.add_argument("--task", required=True, help="task name, directory or task.toml")
    ap.add_argument("--kernel", action="append", default=[], help="kernel to evaluate (repeatable)")
    ap.add_argument("--baseline", default="", help="baseline kernel (default: the task's)")
    ap.add_argument("--runs", type=int, default=10)
    ap.add_argument("--aa", action="store_true", help="A/A: the baseline against a copy of itself")
    ap.add_argument("--epsilon-floor", type=float, default=0.05)
    ap.add_argument("--workspace-mode", choices=["shared", "fresh"], default="shared")
    ap.add_argument("--tasks-dir", default="", help="where task names are looked up (for --aa)")
    ap.add_argument("--lathe-arg", action="append", default=[], help="extra argument for lathe eval")
    ap.add_argument("--timeout", type=float, default=3600, help="seconds per lathe run")
    ap.add_argument("--seed", type=int, default=None, help="seed of the run order")
    ap.add_argument("--out", default="")
    a = ap.parse_args()
    if not a.aa and not a.kernel:
        ap.error("--kernel is required (or --aa)")
    if a.runs < 1:
        ap.error("--runs must be at least 1")
    rng = random.Random(a.seed)
    tmp = tempfile.mkdtemp(prefix="lathe-gpu-stability-")

    baseline = a.baseline
    kernels = list(a.kernel)
    labels = {k: k for k in kernels}
    if a.aa:
        tdir = task_dir(a.task, a.lathe, a.tasks_dir)
        baseline = baseline or task_baseline(tdir)
        copy = copy_bundle(tdir, baseline, tmp)
        kernels = [copy]
        labels = {copy: f"{baseline} (copy)"}

    shared_ws = os.path.join(tmp, "ws-shared")
    if a.workspace_mode == "shared":
        os.makedirs(shared_ws)
        for k in kernels:  # warm the build cache: the timed runs differ only in timing
            e = run_eval(a.lathe, shared_ws, a.task, k, baseline, ["--no-time"], a.timeout)
            print(f"warm-up build {labels[k]}: {e['outcome']} ({e['_wall_s']:.1f} s)", flush=True)

    order = [(k, i) for k in kernels for i in range(a.runs)]
    rng.shuffle(order)
    runs = {k: [] for k in kernels}
    for n, (k, i) in enumerate(order):
        ws = shared_ws
        if a.workspace_mode == "fresh":
            ws = os.path.join(tmp, f"ws-{n}")
            os.makedirs(ws)
        e = run_eval(a.lathe, ws, a.task, k, baseline, a.lathe_arg, a.timeout)
        r = run_record(e)
        r["eps"] = eps_for(r, a.epsilon_floor)
        runs[k].append(r)
        ci = r["ci"] or [None, None]
        print(f"[{n + 1}/{len(order)}] {labels[k]}: {r['outcome']}, ratio {fmt(r['ratio'])} "
              f"[{fmt(ci[0])}, {fmt(ci[1])}], epsilon {r['eps'] * 100:.1f}%, "
              f"median {fmt(r['median_s'] and r['median_s'] * 1e6, '.2f')} us, {r['wall_s']:.0f} s",
              flush=True)

    results = {"schema": "lathe.bench.gpu_stability/1", "date": time.strftime("%Y-%m-%d %H:%M"),
               "task": a.task, "baseline": baseline or "(task default)", "mode": "aa" if a.aa else "ratio",
               "workspace_mode": a.workspace_mode, "runs_per_kernel": a.runs,
               "epsilon_floor": a.epsilon_floor, "lathe_args": a.lathe_arg, "kernels": {}}
    summary = []
    for k in kernels:
        rs = runs[k]
        ok = [r for r in rs if r["outcome"] == "ok" and r["ratio"] is not None]
        ratios = [r["ratio"] for r in ok]
        times = [r["median_s"] for r in ok if r["median_s"]]
        entry = {"runs": rs, "ok_runs": len(ok), "ratio": spread_stats(ratios), "median_s": spread_stats(times)}
        if a.aa and ok:
            def rate(pred):
                return sum(1 for r in ok if pred(r)) / len(ok)
            entry["false_acceptance"] = {
                "rule": "ci_low > 1 + epsilon",
                "rate": rate(lambda r: r["ci"][0] is not None and r["ci"][0] > 1 + r["eps"]),
                "rate_point_rule": rate(lambda r: r["ratio"] > 1 + r["eps"]),
                "rate_called_slower": rate(lambda r: r["ci"][1] is not None and r["ci"][1] < 1 / (1 + r["eps"])),
                "ci_excludes_1": rate(lambda r: r["ci"][0] is not None and (r["ci"][0] > 1 or r["ci"][1] < 1)),
            }
            entry["false_acceptance"]["rate_by_floor"] = {
                str(fl): rate(lambda r, fl=fl: r["ci"][0] is not None and r["ci"][0] > 1 + eps_for(r, fl))
                for fl in (0.0, 0.005, 0.01, 0.02, 0.05)}
        results["kernels"][labels[k]] = entry
        st, ts = entry["ratio"], entry["median_s"]
        line = f"{labels[k]}: {len(ok)}/{len(rs)} ok"
        if st:
            line += (f"; ratio median {st['median']:.4f}, min {st['min']:.4f}, max {st['max']:.4f}, "
                     f"spread {st['rel_spread'] * 100:.2f}%, CV {fmt(st['cv'] and st['cv'] * 100, '.2f')}%")
        if ts:
            line += (f"; time median {ts['median'] * 1e6:.2f} us, spread {ts['rel_spread'] * 100:.2f}%, "
                     f"CV {fmt(ts['cv'] and ts['cv'] * 100, '.2f')}%")
        if "false_acceptance" in entry:
            fa = entry["false_acceptance"]
            line += (f"\n  A/A false acceptance (CI low > 1 + epsilon): {fa['rate'] * 100:.0f}% of {len(ok)} runs; "
                     f"point rule {fa['rate_point_rule'] * 100:.0f}%; called slower {fa['rate_called_slower'] * 100:.0f}%; "
                     f"CI excludes 1 in {fa['ci_excludes_1'] * 100:.0f}%; by epsilon floor "
                     + ", ".join(f"{float(f) * 100:g}%: {v * 100:.0f}%" for f, v in fa["rate_by_floor"].items()))
        summary.append(line)
        for r in rs:
            if r["outcome"] != "ok":
                summary.append(f"  not ok: {r['outcome']}: {r['message']}")

    out = a.out or os.path.join("bench", "results", "gpu-stability-{}-{}-{}.json".format(
        os.path.basename(a.task.rstrip("/")).replace(".toml", ""), "aa" if a.aa else "-".join(a.kernel),
        time.strftime("%Y%m%d-%H%M")))
    os.makedirs(os.path.dirname(out) or ".", exist_ok=True)
    with open(out, "w") as f:
        json.dump(results, f, indent=2)
    shutil.rmtree(tmp, ignore_errors=True)
    print("\n".join(summary))
    print(f"written: {out}")


if __name__ == "__main__":
    main()
