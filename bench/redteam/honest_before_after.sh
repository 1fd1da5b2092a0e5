#!/usr/bin/env bash
# Issue 22's before/after table: the same honest kernels gated by two lathe binaries on one
# machine, alternating, so that both see the same machine: outcome, decision, paired speedup with
# its interval, the A/A interval and the evaluation's wall time. A benchmark, not a test.
#
#   bench/redteam/honest_before_after.sh OLD_LATHE NEW_LATHE [REPEATS [PAIRS_FILE]] > table.md
#
# PAIRS_FILE holds "task-dir kernel [baseline]" lines; the default is the CPU list below.
set -euo pipefail
old=$1 new=$2 reps=${3:-2}
root=$(cd "$(dirname "$0")/../.." && pwd)
pairs=$(cat <<PAIRS
$root/tasks/gemm expert
$root/tasks/softmax expert
$root/tasks/conv2d expert
$root/tasks/layernorm naive
$root/tasks/silu naive
$root/tasks/row_mean naive
$root/tasks/transpose naive
$root/tests/integration/tasks/axpy naive
$root/tests/integration/tasks/mm naive
PAIRS
)
[ -n "${4:-}" ] && pairs=$(cat "$4")
ws_old=$(mktemp -d) ws_new=$(mktemp -d)
echo "| task | kernel | binary | outcome | decision | speedup [95% CI] | A/A [95% CI] | wall s |"
echo "|---|---|---|---|---|---|---|---|"
while read -r task kernel baseline; do
  [ -n "$task" ] || continue
  for rep in $(seq "$reps"); do
    for which in old new; do
      bin=$old ws=$ws_old
      [ "$which" = new ] && bin=$new ws=$ws_new
      "$bin" --workspace "$ws" eval "$task" "$kernel" ${baseline:+--baseline "$baseline"} --json \
        > "$ws/e.json" 2> /dev/null || true
      python3 - "$ws/e.json" "$(basename "$task")" "$kernel" "$which" <<'PY'
import json, sys
try:
    e = json.load(open(sys.argv[1]))
except Exception as x:
    print(f"| {sys.argv[2]} | {sys.argv[3]} | {sys.argv[4]} | (no JSON: {x}) | | | | |")
    sys.exit(0)
p, aa = e.get("paired") or {}, e.get("aa") or {}
fmt = lambda s: f"{s['ratio']:.3f} [{s['ci_low']:.3f}, {s['ci_high']:.3f}]" if s else "-"
print(f"| {sys.argv[2]} | {sys.argv[3]} | {sys.argv[4]} | {e['outcome']} | {e.get('decision', '-')} | "
      f"{fmt(p)} | {fmt(aa)} | {e.get('wall_seconds', 0):.1f} |")
PY
    done
  done
done <<< "$pairs"
rm -rf "$ws_old" "$ws_new"
