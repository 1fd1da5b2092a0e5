#!/usr/bin/env bash
# tasks/conv2d_cuda on the GPU (issue 11; not a test, numbers for the closing note): every stage
# of the staged lineage gated and timed against the stage before it (paired, decision mode), each
# kernel against cuDNN (eager PyTorch timed live on conv2d_cudnn.py, KernelBench's protocol and
# do_bench's). One JSON per evaluation under $OUT (the decompose of the expert:
# bench/experts/decompose_h200.sh);
# a summary line per evaluation on stdout.
#   LATHE=build-gpu/lathe OUT=/tmp/out bench/experts/conv2d_cuda.sh
# Environment: LATHE (lathe binary), OUT (output directory), LATHE_MAX_TIME (longest paired
# series, s; default 2), LATHE_CONV_KB_KERNELS (kernels timed against cuDNN; default every
# stage but naive, whose ~100 kernelbench trials alone would take about half a minute).
set -uo pipefail
LATHE=$(realpath "${LATHE:?lathe binary}")
OUT=${OUT:?output directory}
mkdir -p "$OUT"
OUT=$(realpath "$OUT")
cd "$(dirname "$0")/../.."
ws=$(mktemp -d)
task=tasks/conv2d_cuda
max_time=${LATHE_MAX_TIME:-2}
summary() { python3 bench/eval_summary.py "$1" "  $(basename "$1")"; }

prev=""
for k in naive stage1_smem stage2_regtile stage3_vector stage4_mma expert; do
  f="$OUT/conv2d_cuda-$k${prev:+-vs-$prev}.json"
  echo "eval $k${prev:+ vs $prev}"
  "$LATHE" --workspace "$ws" eval "$task" "$k" ${prev:+--baseline "$prev"} ${prev:---no-time} --json \
    --max-time "$max_time" > "$f" 2> "$OUT/conv2d_cuda-$k.log"
  summary "$f"
  prev=$k
done

for k in ${LATHE_CONV_KB_KERNELS:-stage1_smem stage2_regtile stage3_vector stage4_mma expert}; do
  for mode in kernelbench do_bench; do
    f="$OUT/conv2d_cuda-$k-cudnn-$mode.json"
    echo "eval $k vs cuDNN ($mode)"
    "$LATHE" --workspace "$ws" eval "$task/conv2d_cudnn.py" "$task/kernels/$k" --mode "$mode" --json \
      > "$f" 2> "$OUT/conv2d_cuda-$k-cudnn-$mode.log"
    summary "$f"
  done
done
