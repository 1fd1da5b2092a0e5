#!/usr/bin/env python3
"""The main job's tune step (issue 45, item 6): after `lathe optimize` on a held-out task's naive
kernel, the best kernel's literal knobs become tunables (`lathe tune --parameterize`), a search of
`--evals` configurations runs through the gate, and the winner is timed again, in a fresh paired
series, against the naive kernel, beside the optimized kernel and the expert timed the same way. The
gap recovered (log(kernel / naive) / log(expert / naive)) is printed without and with tuning.

A best kernel with no knob (the rule engine's rewrites of a naive kernel often keep none) is said
to have none and is not tuned: its gap with tuning is its gap without. Nothing here is hidden from
the store: every search and evaluation is a run or an evaluation of the workspace.

  scripts/lib/main_job_tune.py --lathe BUILD/lathe --workspace WS --task T [--evals 8]
                               [--strategy model] [--max-time 0.3] [--label "rules, mechanical"]
Exit 0 when the row was printed (tuned or not), 1 when a command failed.
"""
import argparse, json, math, os, re, subprocess, sys


def lathe(a, *args):
    """(exit code, parsed JSON or None, stderr) of one lathe command in the workspace."""
    p = subprocess.run([a.lathe, "--workspace", a.workspace, *args], capture_output=True, text=True)
    try:
        out = json.loads(p.stdout) if p.stdout.strip() else None
    except json.JSONDecodeError:
        out = None
    return p.returncode, out, p.stderr


def newest_optimize(a):
    """The newest finished optimize run of the task, or None."""
    code, runs, err = lathe(a, "runs", "list", "--json", "--limit", "0")
    if code != 0 or runs is None:
        sys.exit(f"main-job tune: runs list failed: {err.strip()}")
    for r in runs.get("runs", []):  # newest first
        if r.get("kind") == "optimize" and r.get("task") == a.task and r.get("state") == "finished":
            return r
    return None


def speedup_over_naive(a, kernel):
    """A fresh paired series of KERNEL against the naive kernel: (speedup or None, what the gate
    said: its decision, or the outcome and message when nothing was decided)."""
    code, e, err = lathe(a, "eval", a.task, kernel, "--baseline", "naive", "--max-time", str(a.max_time),
                         "--quick", "--json")
    if e is None:
        return None, f"eval failed: {err.strip()[:200]}"
    paired = e.get("paired") or {}
    said = e.get("decision") or f"{e.get('outcome', '?')}: {e.get('message', '')[:160]}"
    return paired.get("ratio"), said


def measured(tuned):
    return f"{tuned.get('timed', 0)} configurations timed, {tuned.get('replayed', 0)} replayed from the cache"


def gap(kernel, expert):
    if not kernel or not expert or kernel <= 0 or expert <= 0 or abs(math.log(expert)) < 1e-9:
        return None
    return math.log(kernel) / math.log(expert)


def text(x, fmt="{:.3f}"):
    return "-" if x is None else fmt.format(x)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--lathe", required=True)
    ap.add_argument("--workspace", required=True)
    ap.add_argument("--task", required=True)
    ap.add_argument("--evals", type=int, default=8)
    ap.add_argument("--strategy", default="model")
    ap.add_argument("--max-time", type=float, default=0.3)
    ap.add_argument("--label", default="")
    ap.add_argument("--kernel", help="tune this bundle instead of the newest optimize run's best")
    a = ap.parse_args()
    if a.kernel:
        run, best_dir, best_name, is_start = {"id": "-"}, a.kernel, os.path.basename(a.kernel.rstrip("/")), False
    else:
        run = newest_optimize(a)
        if run is None:
            print(f"{a.task}: no finished optimize run to tune")
            return 1
        best_dir = os.path.join(a.workspace, ".lathe", "runs", run["id"], "best")
        summary = run.get("summary") or {}
        best_name = (summary.get("best") or {}).get("name", "?")
        # No step accepted: the best is the naive kernel itself, 1x by definition (timing it against
        # itself would only show the machine's noise as a gap).
        is_start = (summary.get("best") or {}).get("hash") == (summary.get("start") or {}).get("hash")
    out_dir = os.path.join(a.workspace, ".lathe", "main-job-tuned", a.task)
    # A kernel that declares [tune] is tuned as its author wrote it (--parameterize is refused there).
    manifest = os.path.join(best_dir, "kernel.toml")
    declared = os.path.isfile(manifest) and re.search(r"^\s*\[tune[.\]]", open(manifest).read(), re.M) is not None
    code, tuned, err = lathe(a, "tune", a.task, best_dir, *([] if declared else ["--parameterize"]),
                             "--strategy", a.strategy, "--evals", str(a.evals), "--max-time", str(a.max_time),
                             "--quick", "--json", "--quiet", "--out", out_dir)
    note, tuned_dir = "", None
    if code == 2 and "no knob" in err:
        note = "no knobs: not tuned"
    elif code != 0 or tuned is None:
        print(f"{a.task}: tune failed (exit {code}): {err.strip()[:300]}")
        return 1
    elif not tuned.get("improved"):
        note = f"tuned ({measured(tuned)}): the default stays, nothing decided faster"
    else:
        tuned_dir = tuned.get("dir") or out_dir
        crown = tuned.get("crown") or {}
        note = (f"tuned ({measured(tuned)}, run {tuned.get('run', '?')}): "
                f"{json.dumps(tuned.get('winner'))} {text(crown.get('speedup'))}x over the default")
    best, best_d = (1.0, "the naive kernel") if is_start else speedup_over_naive(a, best_dir)
    expert, expert_d = speedup_over_naive(a, "expert") if os.path.isdir(expert_path(a)) else (None, "")
    with_tune, with_d = best, best_d
    if tuned_dir:
        with_tune, with_d = speedup_over_naive(a, tuned_dir)
    label = f" [{a.label}]" if a.label else ""
    print(f"{a.task}{label}: optimized ({best_name}, run {run['id']}) {text(best)}x over naive ({best_d}); "
          f"tuned {text(with_tune)}x ({with_d}); expert {text(expert)}x ({expert_d}); gap recovered without "
          f"tuning {text(gap(best, expert), '{:.0%}')}, with {text(gap(with_tune, expert), '{:.0%}')} — {note}")
    return 0


def expert_path(a):
    """The task's expert bundle, when the task is a shipped one or a folder holding one."""
    root = a.task if os.path.isdir(a.task) else os.path.join(os.path.dirname(os.path.dirname(
        os.path.dirname(os.path.abspath(__file__)))), "tasks", a.task)
    return os.path.join(root, "kernels", "expert")


if __name__ == "__main__":
    sys.exit(main())
