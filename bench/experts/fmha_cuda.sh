# fmha_cuda and fmha_causal_cuda on the GPU (a bash fragment, sourced or run with bash): every stage
# gated and timed against the previous one (paired decision mode, non-causal), the expert against
# the naive, the tensor-core stages and the expert against eager SDPA (KernelBench's cuda_event
# protocol, sdpa.py; non-causal and causal), the causal stages paired, and a rules decompose of
# the expert.
#   LATHE=build/lathe OUT=/tmp/fmha bash bench/experts/fmha_cuda.sh
# Writes $OUT/<what>.json (lathe.eval/1, lathe decompose --json) and $OUT/<what>.log.
: "${LATHE:?the lathe binary}" "${OUT:?an output folder}"
mkdir -p "$OUT"
task=tasks/fmha_cuda
causal=tasks/fmha_causal_cuda
prev=naive
"$LATHE" eval "$task" naive --no-time --json > "$OUT/naive.json" 2> "$OUT/naive.log"
echo "naive (checks only): exit $?"
"$LATHE" eval "$causal" naive --no-time --json > "$OUT/causal-naive.json" 2> "$OUT/causal-naive.log"
echo "causal naive (checks only): exit $?"
for k in stage1_smem stage2_mma stage3_cp_async expert; do
  "$LATHE" eval "$task" "$k" --baseline "$prev" --json > "$OUT/$k-vs-$prev.json" 2> "$OUT/$k-vs-$prev.log"
  echo "$k vs $prev: exit $?"
  prev=$k
done
"$LATHE" eval "$task" expert --baseline naive --quick --json > "$OUT/expert-vs-naive.json" 2> "$OUT/expert-vs-naive.log"
echo "expert vs naive: exit $?"
prev=stage1_smem
for k in stage2_mma stage3_cp_async expert; do
  "$LATHE" eval "$causal" "$k" --baseline "$prev" --json > "$OUT/causal-$k-vs-$prev.json" 2> "$OUT/causal-$k-vs-$prev.log"
  echo "causal $k vs $prev: exit $?"
  prev=$k
done
for t in "$task" "$causal"; do
  for k in stage2_mma stage3_cp_async expert; do
    name=$(basename "$t")-$k-kernelbench
    "$LATHE" eval "$t/sdpa.py" "$task/kernels/$k" --mode kernelbench --json > "$OUT/$name.json" 2> "$OUT/$name.log"
    echo "$(basename "$t") $k vs eager SDPA (kernelbench): exit $?"
  done
done
"$LATHE" decompose "$task" expert --proposer rules --json > "$OUT/decompose.json" 2> "$OUT/decompose.log"
echo "decompose (rules): exit $?"
python3 - "$OUT" <<'PY'
import glob, json, os, sys
for f in sorted(glob.glob(os.path.join(sys.argv[1], "*.json"))):
    try:
        j = json.load(open(f))
    except Exception as e:
        print(f"{os.path.basename(f)}: unreadable ({e})"); continue
    p, c = j.get("paired") or {}, j.get("comparability") or {}
    print(f"{os.path.basename(f)}: {j.get('outcome')} median {j.get('median_seconds')} "
          f"ratio {p.get('ratio')} [{p.get('ci_low')}, {p.get('ci_high')}] "
          f"speedup_vs_eager {c.get('speedup_vs_eager')}")
PY
