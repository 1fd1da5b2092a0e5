# topk_cuda on the GPU (a bash fragment, sourced or run with bash): every stage gated and timed
# against the previous one (paired decision mode), the stages and the expert against eager
# torch.topk (KernelBench's cuda_event protocol, topk.py). The decompose of the expert:
# bench/experts/decompose_h200.sh.
#   LATHE=build/lathe OUT=/tmp/topk bash bench/experts/topk_cuda.sh
# Writes $OUT/<what>.json (lathe.eval/1) and $OUT/<what>.log.
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
python3 bench/eval_summary.py "$OUT"
