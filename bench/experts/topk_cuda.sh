# topk_cuda on the GPU (a bash fragment, sourced or run with bash): every stage gated and timed
# against the previous one (paired decision mode), the stages and the expert against eager
# torch.topk (KernelBench's cuda_event protocol, topk.py), and a rules decompose of the expert.
#   LATHE=build/lathe OUT=/tmp/topk bash bench/experts/topk_cuda.sh
# Writes $OUT/<what>.json (lathe.eval/1, lathe decompose --json) and $OUT/<what>.log.
: "${LATHE:?the lathe binary}" "${OUT:?an output folder}"
mkdir -p "$OUT"
task=tasks/topk_cuda
prev=naive
"$LATHE" eval "$task" naive --no-time --json > "$OUT/naive.json" 2> "$OUT/naive.log"
echo "naive (checks only): exit $?"
for k in stage1_bitonic stage2_radix stage3_warp stage4_vector expert; do
  "$LATHE" eval "$task" "$k" --baseline "$prev" --json > "$OUT/$k-vs-$prev.json" 2> "$OUT/$k-vs-$prev.log"
  echo "$k vs $prev: exit $?"
  prev=$k
done
"$LATHE" eval "$task" expert --baseline naive --quick --json > "$OUT/expert-vs-naive.json" 2> "$OUT/expert-vs-naive.log"
echo "expert vs naive: exit $?"
for k in stage2_radix stage4_vector expert; do
  "$LATHE" eval "$task/topk.py" "$task/kernels/$k" --mode kernelbench --json \
    > "$OUT/$k-kernelbench.json" 2> "$OUT/$k-kernelbench.log"
  echo "$k vs eager torch.topk (kernelbench): exit $?"
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
