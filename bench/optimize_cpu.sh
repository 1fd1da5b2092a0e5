#!/usr/bin/env bash
# Issue 7 on the CPU, offline: the four optimize strategies and the four ablation switches on the
# held-out CPU tasks' naive kernels, one budget for all, in a workspace that already holds a
# library (the main job's, or bench/lineage_cpu.sh's). Each run is a copy of that workspace, so
# no run sees another's kernels. Prints one row per (task, strategy): the best kernel's re-measured
# speedup over naive (a fresh paired series), the steps accepted, gate evaluations, what ended the
# run, and wall time.
#
# Rule-engine results: every strategy draws on one rule catalog, so this table measures the
# machinery (budgets, gate, re-measure, retrieval), not the value of the library. That is
# measured only with a model. Not a test: its numbers go into closing notes.
#
#   bench/optimize_cpu.sh WORKSPACE [BUILD_DIR] [OUT_DIR]
set -uo pipefail
cd "$(dirname "$0")/.."
src_ws=${1:?usage: bench/optimize_cpu.sh WORKSPACE [BUILD_DIR] [OUT_DIR]}
lathe=${2:-build}/lathe
out=${3:-/tmp/lathe-optimize-cpu}
budget=${LATHE_BENCH_BUDGET:-steps=4}
max_time=${LATHE_BENCH_MAX_TIME:-0.3}
tasks=${LATHE_BENCH_TASKS:-layernorm row_mean silu transpose}
rm -rf "$out" && mkdir -p "$out"
echo "budget $budget, --max-time $max_time, proposer rules; library of $src_ws:"
"$lathe" --workspace "$src_ws" skills list
printf '\n%-10s %-34s %9s %6s %6s %-10s %6s\n' task "strategy (ablation)" "best/naive" steps evals stop secs
for t in $tasks; do
  for variant in "skills" "none" "forward-memory" "expert-source" \
                 "skills intent-only" "skills no-preconditions" "skills no-admission" "skills no-lineage-order"; do
    set -- $variant
    strat=$1
    abl=${2:-none}
    ws="$out/ws-$t-$strat-$abl"
    cp -r "$src_ws" "$ws"
    t0=$(date +%s.%N)
    "$lathe" --workspace "$ws" optimize "$t" naive --proposer rules --strategy "$strat" --ablate "$abl" \
      --budget "$budget" --max-time "$max_time" --no-expert --json > "$out/$t-$strat-$abl.json" 2> "$out/$t-$strat-$abl.err"
    code=$?
    secs=$(echo "$(date +%s.%N) - $t0" | bc)
    python3 - "$out/$t-$strat-$abl.json" "$t" "$strat ($abl)" "$code" "$secs" <<'EOF'
import json, sys
path, task, label, code, secs = sys.argv[1:]
try:
    j = json.load(open(path))
except Exception:
    print(f"{task:<10} {label:<34} failed (exit {code})")
    sys.exit()
b = j.get("best_vs_start")
print(f"{task:<10} {label:<34} {('%.3fx' % b) if b else '-':>9} {len(j['steps']):>6} {j['used']['evals']:>6} "
      f"{j['stop']:<10} {float(secs):>6.1f}")
EOF
  done
done
echo
echo "rule-engine results (mechanical rewrites): they show the machinery works, not what a model would find"
