# Issue 11's FMHA stage 5 (wgmma) on the H200 in one call: builds with scripts/gpu-run, gates
# stage5_wgmma paired against the mma.sync expert (non-causal and causal), times it and the expert
# against eager SDPA (KernelBench's cuda_event protocol, through the bench/experts/fmha*_sdpa
# wrappers that allow fast math as the task does), then optionally evolve's throughput (issue 9).
#   OUT=/tmp/out bash bench/experts/fmha_wgmma_h200.sh
#   LATHE_WGMMA_EVOLVE=1 adds the evolve run (softmax_cuda, --child-timing quick, 60 evaluations)
set -u
export OUT
LATHE_GPU_PHASES="none" bash scripts/gpu-run || exit 1
L=$PWD/build-gpu/lathe
ws=$(mktemp -d)
ev() {  # label args...
  local label=$1; shift
  timeout 150 $L --workspace $ws eval "$@" --json > $OUT/$label.json 2> $OUT/$label.log
  echo "== $label: exit $?"
  python3 bench/eval_summary.py $OUT/$label.json $label
}
ev fmha-stage5-vs-expert tasks/fmha_cuda stage5_wgmma --baseline expert --max-time 0.5
ev fmha-causal-stage5-vs-expert tasks/fmha_causal_cuda stage5_wgmma --baseline expert --max-time 0.5
for k in stage5_wgmma expert; do
  ev fmha-$k-sdpa bench/experts/fmha_sdpa tasks/fmha_cuda/kernels/$k --mode kernelbench
  ev fmha-causal-$k-sdpa bench/experts/fmha_causal_sdpa tasks/fmha_cuda/kernels/$k --mode kernelbench
done
if [ "${LATHE_WGMMA_EVOLVE:-0}" = 1 ]; then
  cmake --build build-gpu -j"$(nproc)" --target lathe-mock-model > /dev/null 2>&1
  LATHE_EVOLVE_AA=0 LATHE_EVOLVE_IN_FLIGHT=8 LATHE_EVOLVE_BUDGET=evals=60 \
    LATHE_EVOLVE_ARGS="--child-timing quick" \
    timeout 330 bash bench/evolve_h200.sh build-gpu $OUT/evolve tasks/softmax_cuda
fi
