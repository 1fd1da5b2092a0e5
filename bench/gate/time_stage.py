#!/usr/bin/env python3
"""Where a CPU evaluation's time stage goes, for two lathe binaries run in turn (issue 41: the
gate's own cost per timed evaluation). Not a test: it prints a table for the closing note.

Each round runs `lathe eval TASK KERNEL --json` once with each binary, in alternating order (A B,
then B A, ...), and reads the stage's laps from the evaluation's diagnostics ("time stage: inputs
drawn 0.01 s, workers started 0.23 s, arenas staged and set up 1.82 s, ..."), and the stages'
seconds. The ratio of each lap is paired by round: B's over A's in the same round, so that the
machine's load, which wanders by tens of percent here, weighs on both sides of a ratio alike.
The machine's load average is printed before and after.

The A/A control's interval (its width: the noise the decision's margin is made of) is printed
per side beside the laps.

Usage: bench/gate/time_stage.py --a OLD_LATHE --b NEW_LATHE [--rounds 5] [--max-time 0.5]
                                [--a-args "..."] [--b-args "..."] [--out FILE.json] TASK KERNEL

One build against itself with other eval options: --a L --b L --b-args "--start-workers one-by-one".
"""
import argparse, json, math, os, re, statistics, subprocess, sys, tempfile


def laps(diagnostics):
    for line in diagnostics.splitlines():
        if line.startswith("time stage: "):
            return {m.group(1): float(m.group(2))
                    for m in re.finditer(r"([a-z][a-z ]*?) ([0-9.]+) s", line[len("time stage: "):])}
    return {}


def run(lathe, ws, task, kernel, max_time, extra):
    out = subprocess.run([lathe, "--workspace", ws, "eval", task, kernel, "--json", "--max-time",
                          str(max_time), *extra], capture_output=True, text=True)
    try:
        e = json.loads(out.stdout)
    except json.JSONDecodeError:
        sys.exit(f"{lathe}: no JSON (exit {out.returncode}): {out.stderr[-400:]}")
    row = laps(e.get("diagnostics", ""))
    for s in e.get("stage_seconds", []):
        row["stage " + s["stage"]] = s["seconds"]
    row["wall"] = e.get("wall_seconds", 0)
    aa = e.get("aa") or {}
    if aa.get("ci_low") and aa.get("ci_high"):
        row["A/A interval width"] = aa["ci_high"] - aa["ci_low"]
    row["outcome"] = e.get("outcome")
    # An undecided stage whose pairs differed is timed again with more (gate.cpp time_all): the
    # pairs of the stage that counted, and the first attempt's A/A width where there was one.
    row["pairs"] = (e.get("policy") or {}).get("processes")
    m = re.search(r"process pairs that differed left it undecided \(.*?A/A interval \[([0-9.e+-]+), "
                  r"([0-9.e+-]+)\]", e.get("diagnostics", ""))
    row["first A/A width"] = float(m.group(2)) - float(m.group(1)) if m else None
    return row


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--a", required=True, help="the lathe binary before")
    p.add_argument("--b", required=True, help="the lathe binary after")
    p.add_argument("--a-args", default="", help="extra `lathe eval` options of side a")
    p.add_argument("--b-args", default="", help="extra `lathe eval` options of side b")
    p.add_argument("--rounds", type=int, default=5)
    p.add_argument("--warmup", type=int, default=1,
                   help="uncounted evaluations first (side a), so that neither side's first round pays a cold build")
    p.add_argument("--max-time", type=float, default=0.5)
    p.add_argument("--out")
    p.add_argument("task")
    p.add_argument("kernel")
    a = p.parse_args()
    load0 = open("/proc/loadavg").read().split()[:3]
    rows = {"a": [], "b": []}
    with tempfile.TemporaryDirectory(prefix="lathe-time-stage-") as ws:
        for w in range(a.warmup):
            x = run(a.a, ws, a.task, a.kernel, a.max_time, a.a_args.split())
            print(f"warm-up {w + 1}/{a.warmup} (not counted): {x['wall']:.2f} s", file=sys.stderr)
        for r in range(a.rounds):
            order = ["a", "b"] if r % 2 == 0 else ["b", "a"]
            for side in order:
                extra = (a.a_args if side == "a" else a.b_args).split()
                rows[side].append(run(getattr(a, side), ws, a.task, a.kernel, a.max_time, extra))
            print(f"round {r + 1}/{a.rounds}: a {rows['a'][-1]['wall']:.2f} s, b {rows['b'][-1]['wall']:.2f} s",
                  file=sys.stderr)
            save(a, rows, load0, None)  # a run stopped at its time limit keeps the rounds it finished
    load1 = open("/proc/loadavg").read().split()[:3]
    skip = ("outcome", "pairs", "first A/A width")
    keys = [k for k in rows["a"][0] if k not in skip and all(k in x for x in rows["a"] + rows["b"])]
    print(f"a: {a.a} {a.a_args}; b: {a.b} {a.b_args}")
    print(f"task {a.task}, kernel {a.kernel}, --max-time {a.max_time}, {a.rounds} rounds; "
          f"load average before {' '.join(load0)}, after {' '.join(load1)}")
    print(f"outcomes: a {[x['outcome'] for x in rows['a']]}, b {[x['outcome'] for x in rows['b']]}")
    for side in ("a", "b"):
        again = [f"{x['first A/A width']:.3f}" for x in rows[side] if x.get("first A/A width") is not None]
        print(f"pairs {side}: {[x.get('pairs') for x in rows[side]]}; timed again after a first A/A width of "
              f"{', '.join(again) if again else 'none'}")
    print(f"{'lap (s)':34} {'a median':>9} {'b median':>9} {'b/a (paired, geo. mean)':>24}")
    for k in keys:
        av = [x[k] for x in rows["a"]]
        bv = [x[k] for x in rows["b"]]
        ratios = [y / x for x, y in zip(av, bv) if x > 0 and y > 0]
        geo = math.exp(statistics.mean(math.log(r) for r in ratios)) if ratios else float("nan")
        d = 3 if "width" in k else 2
        print(f"{k:34} {statistics.median(av):9.{d}f} {statistics.median(bv):9.{d}f} {geo:24.2f}")
    save(a, rows, load0, load1)


def save(a, rows, load0, load1):
    if a.out:
        with open(a.out, "w") as f:
            json.dump({"task": a.task, "kernel": a.kernel, "a": a.a, "b": a.b, "a_args": a.a_args,
                       "b_args": a.b_args, "rounds": rows, "warmup": a.warmup,
                       "load_before": load0, "load_after": load1}, f, indent=1)


if __name__ == "__main__":
    main()
