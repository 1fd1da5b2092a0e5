# fmha_cuda and fmha_causal_cuda on the GPU (a bash fragment, sourced or run with bash): every stage
# gated and timed against the previous one (paired decision mode, non-causal), the expert against
# the naive, stage5_wgmma against the expert, the tensor-core stages against eager SDPA
# (KernelBench's cuda_event protocol, sdpa.py; non-causal and causal), the causal stages paired.
# The decompose of the expert: bench/experts/decompose_h200.sh.
#   LATHE=build/lathe OUT=/tmp/fmha bash bench/experts/fmha_cuda.sh
# Writes $OUT/<what>.json (lathe.eval/1) and $OUT/<what>.log.
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
# Stage B (lineage_hopper.toml): the wgmma stage against the expert it carries to Hopper.
"$LATHE" eval "$task" stage5_wgmma --baseline expert --json > "$OUT/stage5_wgmma-vs-expert.json" 2> "$OUT/stage5_wgmma-vs-expert.log"
echo "stage5_wgmma vs expert: exit $?"
"$LATHE" eval "$causal" stage5_wgmma --baseline expert --json > "$OUT/causal-stage5_wgmma-vs-expert.json" 2> "$OUT/causal-stage5_wgmma-vs-expert.log"
echo "causal stage5_wgmma vs expert: exit $?"
# Against eager SDPA through the bench/experts/fmha*_sdpa wrappers: they allow fast math as the
# task does (the bare sdpa.py problem refuses the expert's and stage 5's --use_fast_math).
for w in fmha_sdpa fmha_causal_sdpa; do
  for k in stage2_mma stage3_cp_async expert stage5_wgmma; do
    name=$w-$k-kernelbench
    "$LATHE" eval "bench/experts/$w" "$task/kernels/$k" --mode kernelbench --json > "$OUT/$name.json" 2> "$OUT/$name.log"
    echo "$w $k vs eager SDPA (kernelbench): exit $?"
  done
done
python3 bench/eval_summary.py "$OUT"
