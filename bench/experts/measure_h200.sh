# Issue 11 (and 9) on the H200 in one call (bench/results/experts-h200-2026-11-30.md): builds with
# scripts/gpu-run, then the new experts against their baselines (gemm stages vs cuBLAS on the
# ragged shape; FMHA vs eager SDPA, conv2d vs cuDNN, top-k vs torch.topk in KernelBench's protocol)
# and stage by stage (each paired against the one before), and evolve's throughput.
#   OUT=/tmp/out bash bench/experts/measure_h200.sh
# bench/experts/check.sh is the quicker first look (every kernel's checks, nothing timed).
set -u
export OUT
LATHE_GPU_PHASES="none" bash scripts/gpu-run || exit 1
cmake --build build-gpu -j"$(nproc)" --target lathe-mock-model > /dev/null 2>&1  # evolve's proposer
L=$PWD/build-gpu/lathe
ws=$(mktemp -d)
summ() { python3 bench/eval_summary.py "$1" "$2"; }  # file label
ev() {  # label args...
  local label=$1; shift
  timeout 120 $L --workspace $ws eval "$@" --json > $OUT/$label.json 2> $OUT/$label.log
  summ $OUT/$label.json $label
}
# Issue 9: evolve throughput with the mock model (softmax_cuda from naive), no A/A (measured before).
# An evaluation budget, not a time one: a time budget refuses model calls whose worst case (the
# command provider's 60 s timeout) would pass it, and ends the run that long before its limit.
LATHE_EVOLVE_AA=0 LATHE_EVOLVE_IN_FLIGHT=8 LATHE_EVOLVE_GENERATIONS=3 LATHE_EVOLVE_BUDGET=evals=60 \
  timeout 300 bash bench/evolve_h200.sh build-gpu $OUT/evolve tasks/softmax_cuda
# Issue 11: gemm stages vs cuBLAS on the ragged shape (a copy of the task timing that set).
rg=$(mktemp -d)/gemm_cuda; cp -rL tasks/gemm_cuda $rg
python3 - $rg/task.toml <<'PY'
import re, sys
s = open(sys.argv[1]).read()
s = s.replace('name = "main"\nM = 4096\nN = 4096\nK = 4096\ntime = true', 'name = "main"\nM = 4096\nN = 4096\nK = 4096')
s = s.replace('name = "ragged"\nM = 997\nN = 1016\nK = 1032', 'name = "ragged"\nM = 997\nN = 1016\nK = 1032\ntime = true')
open(sys.argv[1], "w").write(s)
PY
for k in stage6_tma_ws stage5_wgmma expert; do ev gemm-ragged-$k $rg $k --baseline cublas --max-time 1; done
ev gemm-stage6-vs-stage5 tasks/gemm_cuda stage6_tma_ws --baseline stage5_wgmma --max-time 0.5
ev gemm-stage5-vs-expert tasks/gemm_cuda stage5_wgmma --baseline expert --max-time 0.5
# FMHA vs SDPA, conv2d vs cuDNN, top-k vs torch.topk (KernelBench's protocol, eager timed live).
# (the FMHA expert is built with --use_fast_math: through the wrappers that allow it as the task does)
ev fmha-expert-sdpa bench/experts/fmha_sdpa tasks/fmha_cuda/kernels/expert --mode kernelbench
ev fmha-causal-expert-sdpa bench/experts/fmha_causal_sdpa tasks/fmha_cuda/kernels/expert --mode kernelbench
ev fmha-stage3_cp_async-sdpa tasks/fmha_cuda/sdpa.py tasks/fmha_cuda/kernels/stage3_cp_async --mode kernelbench
ev conv2d-expert-cudnn tasks/conv2d_cuda/conv2d_cudnn.py tasks/conv2d_cuda/kernels/expert --mode kernelbench
ev conv2d-expert-cudnn-dobench tasks/conv2d_cuda/conv2d_cudnn.py tasks/conv2d_cuda/kernels/expert --mode do_bench
ev topk-expert-torch tasks/topk_cuda/topk.py tasks/topk_cuda/kernels/expert --mode kernelbench
# Stage by stage (paired, each against the one before).
prev=naive; for k in stage1_smem stage2_mma stage3_cp_async expert; do ev fmha-$k-vs-$prev tasks/fmha_cuda $k --baseline $prev --max-time 0.5; prev=$k; done
prev=naive; for k in stage1_smem stage2_regtile stage3_vector stage4_mma expert; do ev conv2d-$k-vs-$prev tasks/conv2d_cuda $k --baseline $prev --max-time 0.5; prev=$k; done
prev=naive; for k in stage1_bitonic stage2_radix stage3_warp stage4_vector expert; do ev topk-$k-vs-$prev tasks/topk_cuda $k --baseline $prev --max-time 0.5; prev=$k; done
