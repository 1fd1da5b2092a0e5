#!/usr/bin/env bash
# Issue 22 on the H200, in two device calls of under ten minutes each (a benchmark, not a test):
#   PHASE=build-test: this tree (build-gpu) and the tree before issue 22 (old-lathe/, an
#     untracked copy of commit dee7e85 made with `git archive`, build-old) built at once; the
#     doctor; the GPU tests (the red team's CUDA analogues, the CUDA gate's hostile kernels,
#     device trials, PyTorch problems on CUDA);
#     GPU_TESTS names the test targets built (CTEST_REGEX those run);
#   PHASE=measure: the shipped CUDA experts gated by both binaries, alternating (the
#     before/after table), and the cached KernelBench ReLU case's cost with both.
# Everything lands in $OUT (at most 8 files come back).
set -uo pipefail
cd "$(dirname "$0")/../.."
OUT=${OUT:-/tmp/lathe-issue22}
mkdir -p "$OUT"
start=$(date +%s)
log() { echo "[$(( $(date +%s) - start ))s] $*" | tee -a "$OUT/progress.log"; }
build() {  # source-dir build-dir tests(ON|OFF) targets...
  local src=$1 dir=$2 tests=$3; shift 3
  cmake -S "$src" -B "$dir" -DCMAKE_BUILD_TYPE=Release -DLATHE_BUILD_TESTS="$tests" \
    -DLATHE_DEPS_PREFIX="$PWD/deps" > "$OUT/build-$(basename "$dir").log" 2>&1 &&
  cmake --build "$dir" -j8 --target "$@" >> "$OUT/build-$(basename "$dir").log" 2>&1
}
workers="lathe lathe-worker lathe-worker-cuda lathe-probe-cuda"
if [ "${PHASE:-build-test}" = build-test ]; then
  { nvidia-smi; nvcc --version | tail -1; uname -r; id; } >> "$OUT/progress.log" 2>&1
  log "build (new and old at once)"
  build . build-gpu ON $workers ${GPU_TESTS:-redteam_gpu_test cuda_gate_test device_trial_test problem_gpu_test} &
  new=$!
  build old-lathe build-old OFF $workers &
  old=$!
  wait $new; rn=$?
  wait $old; ro=$?
  log "build new exit $rn, old exit $ro"
  [ $rn -eq 0 ] || { grep -E "error" -A3 "$OUT/build-build-gpu.log" | head -40 | tee -a "$OUT/progress.log"; exit 1; }
  ws=$(mktemp -d)
  log doctor
  build-gpu/lathe --workspace "$ws" doctor 2>&1 | tee -a "$OUT/progress.log"
  log "gpu tests"
  ctest --test-dir build-gpu -L gpu -R "${CTEST_REGEX:-redteam_gpu|cuda_gate|device_trial|problem_gpu}" \
    --output-on-failure -V > "$OUT/gpu-tests.log" 2>&1
  log "gpu tests exit $?"
  grep -E "^\S*\[ +(FAILED|SKIPPED) +\]|\[redteam-gpu\]|tests passed|Total Test" "$OUT/gpu-tests.log" | head -60 | tee -a "$OUT/progress.log"
else
  [ -x build-gpu/lathe ] || build . build-gpu ON $workers
  [ -x build-old/lathe ] || build old-lathe build-old OFF $workers
  pairs=$(mktemp)
  for t in ${TASKS:-tasks/gemm_cuda tasks/softmax_cuda tasks/rmsnorm_cuda tasks/relu_cuda tasks/topk_cuda tasks/reduction_cuda}; do
    echo "$PWD/$t expert" >> "$pairs"
  done
  echo "$PWD/tests/integration/tasks/axpy_cuda naive" >> "$pairs"
  echo "$PWD/tests/integration/tasks/mm_cuda naive" >> "$pairs"
  log "honest kernels, old and new"
  bash bench/redteam/honest_before_after.sh build-old/lathe build-gpu/lathe "${REPS:-1}" "$pairs" \
    > "$OUT/honest-cuda.md" 2>> "$OUT/progress.log"
  cat "$OUT/honest-cuda.md" | tee -a "$OUT/progress.log"
  for which in new old; do
    bin=build-gpu/lathe
    [ "$which" = old ] && bin=build-old/lathe
    log "kernelbench relu ($which)"
    python3 bench/kernelbench_relu.py --lathe "$bin" --also "" --no-torch \
      --out "$OUT/kernelbench-relu-$which.json" 2>&1 | tail -15 | tee -a "$OUT/progress.log"
  done
fi
log done
