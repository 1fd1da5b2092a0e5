#!/usr/bin/env bash
# Issue 11's "must show" on the GPU (not a test; numbers for the closing note): `lathe decompose`
# of each new expert with the rule engine and with the mock model, and how many of the task's
# hand-made stages (tasks/<task>/lineage.toml, read only by the scoring afterwards) the walk
# recovers (bench/lineage_score.py). Every (task, proposer) walk runs at once in a workspace of its
# own, LATHE_DECOMPOSE_JOBS (default 3) at a time: builds and checks spread over the cores, and
# lathe's device lock serializes the timing. More at once is no faster: on the H200's 16 cores, ten
# walks at once (top-k's host oracle among them) made A/A intervals of 0.4-2.1, and init refused
# half of the experts as too noisy to confirm.
# A walk still going after LATHE_DECOMPOSE_LIMIT seconds (default 420) is stopped and scored on
# the steps it had accepted. Rule-engine and mock-model results show the machinery, not what a
# model would find.
#   bench/experts/decompose_h200.sh BUILD_DIR OUT_DIR [TASK[:KERNEL]…]
# Environment: LATHE_DECOMPOSE_PROPOSERS ("rules mock"), LATHE_DECOMPOSE_ARGS (default
# "--quick --max-time 0.5 --max-steps 6 --max-rejections 3").
set -uo pipefail
build=$(cd "${1:?build dir}" && pwd); out=${2:?out dir}; shift 2
mkdir -p "$out"; out=$(cd "$out" && pwd)
entries=${*:-tasks/fmha_cuda tasks/fmha_causal_cuda tasks/conv2d_cuda tasks/topk_cuda}
args=${LATHE_DECOMPOSE_ARGS:---quick --max-time 0.5 --max-steps 6 --max-rejections 3}
limit=${LATHE_DECOMPOSE_LIMIT:-420}
root=$(mktemp -d)
pids=()
for e in $entries; do
  task=${e%%:*}; kernel=expert; [[ $e == *:* ]] && kernel=${e#*:}
  for p in ${LATHE_DECOMPOSE_PROPOSERS:-rules mock}; do
    name=$(basename "$task")-$kernel-$p
    ws=$root/$name; mkdir -p "$ws/.lathe"
    proposer=rules
    if [ "$p" = mock ]; then
      proposer=llm
      cat > "$ws/lathe.toml" <<TOML
provider = "command"
model = "lathe-mock-model"
[command]
argv = ["$build/lathe-mock-model", "--seed", "5"]
timeout_seconds = 60
TOML
    fi
    while [ "$(jobs -rp | wc -l)" -ge "${LATHE_DECOMPOSE_JOBS:-3}" ]; do wait -n; done
    (cd "$ws" && timeout -s INT "$limit" "$build/lathe" decompose "$OLDPWD/$task" "$kernel" \
       --proposer "$proposer" $args --json > "$out/decompose-$name.json" 2> "$out/decompose-$name.log"
     echo "exit $?" >> "$out/decompose-$name.log") &
    pids+=($!)
  done
done
wait "${pids[@]}"
for e in $entries; do
  task=${e%%:*}; kernel=expert; [[ $e == *:* ]] && kernel=${e#*:}
  for p in ${LATHE_DECOMPOSE_PROPOSERS:-rules mock}; do
    name=$(basename "$task")-$kernel-$p
    lineage=$task/lineage.toml; [ "$kernel" = expert ] || lineage=/dev/null
    python3 bench/lineage_score.py "$build/lathe" "$root/$name/.lathe" "$lineage" --label "$name" \
      || { echo "$name: no run ($(tail -3 "$out/decompose-$name.log" | tr '\n' ' '))"; }
  done
done
