# Every kernel of the given expert tasks through the gate's checks only (--no-time): the quick
# first look at new kernels on a GPU before anything is timed (a bash fragment).
#   LATHE=build/lathe OUT=/tmp/check bash bench/experts/check.sh tasks/fmha_cuda tasks/topk_cuda …
# Writes $OUT/<task>-<kernel>.json (lathe.eval/1) and prints one line per kernel.
: "${LATHE:?the lathe binary}" "${OUT:?an output folder}"
mkdir -p "$OUT"
for t in "$@"; do
  for k in "$t"/kernels/*/; do
    k=$(basename "$k")
    name=$(basename "$t")-$k
    start=$(date +%s.%N)
    "$LATHE" eval "$t" "$k" --no-time --json > "$OUT/$name.json" 2> "$OUT/$name.log"
    rc=$?
    python3 - "$OUT/$name.json" "$name" "$rc" "$start" <<'PY'
import json, sys, time
try:
    j = json.load(open(sys.argv[1]))
except Exception:
    j = {}
checks = j.get("checks") or []
bad = [c for c in checks if not c.get("passed")]
worst = max((c.get("norm_err") or 0 for c in checks), default=None)
print(f"{sys.argv[2]:<34} exit {sys.argv[3]} {j.get('outcome')} checks {len(checks) - len(bad)}/{len(checks)} "
      f"worst nerr {worst} {time.time() - float(sys.argv[4]):.0f}s  {(j.get('message') or '')[:300]}")
for c in bad[:3]:
    print(f"    {c.get('shape_set')} seed {c.get('seed')} {c.get('output')}: max_abs {c.get('max_abs_err')} "
          f"nerr {c.get('norm_err')} {c.get('first_mismatches', [])[:2]}")
PY
  done
done
