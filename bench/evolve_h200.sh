#!/usr/bin/env bash
# Issue 9 on the GPU (not a test; numbers for the closing note): evolve's gated-evaluation
# throughput with the mock model as proposer (a command provider: every child a real text edit, no
# model latency; --mutation-changes 3 so that children compose several edits and rarely repeat a
# kernel the run has gated), children proposed and gated in batches (--in-flight), and the A/A
# false-acceptance rate of elite replacement (a kernel contested against byte-different copies of
# itself: how often the paired re-measure calls a copy faster).
#   bench/evolve_h200.sh BUILD_DIR OUT_DIR [TASK…]      (default: tasks/softmax_cuda)
# Environment: LATHE_EVOLVE_START (naive), LATHE_EVOLVE_IN_FLIGHT (4), LATHE_EVOLVE_CHILDREN (8),
# LATHE_EVOLVE_GENERATIONS (3), LATHE_EVOLVE_CHANGES (3), LATHE_AA_TASK (tasks/relu_cuda),
# LATHE_EVOLVE_AA (1; 0 skips the A/A contests), LATHE_EVOLVE_ARGS (more evolve options, e.g.
# --quick), LATHE_EVOLVE_BUDGET (evals=400).
set -uo pipefail
build=${1:?build dir}; out=${2:?out dir}; shift 2
tasks=${*:-tasks/softmax_cuda}; start=${LATHE_EVOLVE_START:-naive}
ws=$(mktemp -d)
mkdir -p "$ws/.lathe" "$out"
cat > "$ws/lathe.toml" <<TOML
provider = "command"
model = "lathe-mock-model"
[command]
argv = ["$PWD/$build/lathe-mock-model", "--seed", "5", "--mutation-changes", "${LATHE_EVOLVE_CHANGES:-3}"]
timeout_seconds = 60
TOML
inflight=${LATHE_EVOLVE_IN_FLIGHT:-4}
for task in $tasks; do
  name=$(basename "$task")
  t0=$(date +%s.%N)
  (cd "$ws" && "$OLDPWD/$build/lathe" evolve "$OLDPWD/$task" "$start" --proposer llm \
     --generations "${LATHE_EVOLVE_GENERATIONS:-3}" --islands 2 --population 2 \
     --children "${LATHE_EVOLVE_CHILDREN:-8}" --in-flight "$inflight" --migrate-every 1 --budget "${LATHE_EVOLVE_BUDGET:-evals=400}" ${LATHE_EVOLVE_ARGS:-} --json) \
     > "$out/evolve-$name.json" 2> "$out/evolve-$name.log"
  rc=$?
  t1=$(date +%s.%N)
  python3 - "$out/evolve-$name.json" "$t0" "$t1" "$rc" "$name" "$inflight" <<'PY'
import json, sys
j = json.load(open(sys.argv[1])) if sys.argv[4] == "0" else {}
wall = float(sys.argv[3]) - float(sys.argv[2])
ev = j.get("evaluations", 0)
kids = j.get("children") or 0
print(f"evolve {sys.argv[5]} exit {sys.argv[4]}: {kids} children, {ev} gate evaluations in {wall:.0f} s "
      f"-> {3600 * ev / wall if wall else 0:.0f} evaluations/hour, {3600 * kids / wall if wall else 0:.0f} "
      f"children/hour (mock model, --in-flight {sys.argv[6]}); "
      f"best {j.get('best_speedup')} over the baseline; best score per generation {j.get('best_per_generation')}; "
      f"failed {j.get('failed')} {j.get('failures')}, duplicates {j.get('duplicates')}")
PY
done
# A/A: the expert against 8 copies of itself (a comment line makes each byte-different), twice
# (LATHE_EVOLVE_AA=0 skips it).
[ "${LATHE_EVOLVE_AA:-1}" = 0 ] && exit 0
aa_task=${LATHE_AA_TASK:-tasks/relu_cuda}
for i in 1 2 3 4 5 6 7 8; do
  mkdir -p "$ws/copy$i"
  src=$(ls "$aa_task"/kernels/expert/*.cu "$aa_task"/kernels/expert/*.cpp 2>/dev/null | head -1)
  cp -r "$aa_task"/kernels/expert/. "$ws/copy$i/"
  echo "// A/A copy $i" >> "$ws/copy$i/$(basename "$src")"
done
for round in 1 2; do
  "$build/lathe" --workspace "$ws" score "$aa_task" expert $(for i in 1 2 3 4 5 6 7 8; do echo "$ws/copy$i"; done) \
    > "$out/aa-$round.json" 2>> "$out/evolve.log"
done
python3 - "$out"/aa-1.json "$out"/aa-2.json <<'PY'
import json, sys
rows = [c for f in sys.argv[1:] for c in json.load(open(f))["candidates"]]
faster = sum(1 for c in rows if c["faster"])
decided = sum(1 for c in rows if c["decided"])
ratios = sorted(c["reward"] for c in rows)
print(f"A/A contests: {len(rows)}, decided {decided}, called faster {faster} "
      f"(false-acceptance rate {faster / len(rows):.3f}); ratios {ratios[0]:.4f}..{ratios[-1]:.4f}, "
      f"margin {rows[0]['margin']:.4f}")
PY
