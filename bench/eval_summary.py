#!/usr/bin/env python3
"""One line per `lathe eval --json` result (lathe.eval/1), for the GPU scripts' stdout.

    bench/eval_summary.py FILE.json [LABEL]      one file (the label defaults to its name)
    bench/eval_summary.py DIR                    every *.json in DIR, by name

Prints the outcome, the kernel against its baseline, the medians, the paired ratio with its 95%
interval, the fraction of roofline, what comparability modes measured against eager PyTorch, the
wall time, and the message of anything that is not ok. A file that is not JSON says so.
"""
import glob
import json
import os
import sys


def line(path, label):
    try:
        j = json.load(open(path))
    except Exception as e:
        return f"{label}: unreadable ({e})"
    p, c = j.get("paired") or {}, j.get("comparability") or {}
    out = (f"{label}: {j.get('outcome')} {j.get('kernel_name')} vs {j.get('baseline_name')}; "
           f"median {j.get('median_seconds')} base {j.get('baseline_median_seconds')}; "
           f"ratio {p.get('ratio')} [{p.get('ci_low')}, {p.get('ci_high')}]; "
           f"roofline {j.get('roofline_fraction')}")
    if c:
        out += (f"; mean {c.get('mean_seconds')} eager {c.get('eager_mean_seconds')} "
                f"(median {c.get('eager_median_seconds')}) speedup_vs_eager {c.get('speedup_vs_eager')}")
    out += f"; wall {j.get('wall_seconds')}"
    if j.get("outcome") != "ok":
        out += f"; {(j.get('message') or '')[:160]}"
    return out


def main():
    if len(sys.argv) < 2:
        sys.exit(__doc__)
    target = sys.argv[1]
    if os.path.isdir(target):
        for f in sorted(glob.glob(os.path.join(target, "*.json"))):
            print(line(f, os.path.basename(f)))
    else:
        print(line(target, sys.argv[2] if len(sys.argv) > 2 else os.path.basename(target)))


if __name__ == "__main__":
    main()
