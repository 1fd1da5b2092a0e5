#!/usr/bin/env bash
# Issue 23 item 5, one stream of the strategies table with a real model: one strategy (and
# ablation) over the held-out CPU tasks' naive kernels, one budget for all, each task in its own
# copy of a workspace that holds the model-built library (so no run sees another's kernels).
# The model is whatever the workspace's lathe.toml names (here: the command provider pointed at
# ../shared/model-relay.sh, answered by a helper agent that sees only the prompts and bundles).
# Writes OUT/<task>.json (lathe.optimize/1), OUT/<task>.log and OUT/ws-<task>/.lathe (the run's
# evaluations and calls, for bench/model/strategies_table.py). Not a test: its numbers go into
# bench/results and closing notes, labelled with the model.
#
#   bench/model/optimize_stream.sh LATHE WORKSPACE OUT STRATEGY [ABLATION]
#   LATHE_BENCH_BUDGET (steps=3), LATHE_BENCH_TASKS (layernorm silu row_mean)
set -uo pipefail
lathe=${1:?usage: optimize_stream.sh LATHE WORKSPACE OUT STRATEGY [ABLATION]}
src_ws=${2:?workspace (.lathe folder) with the library}
out=${3:?output folder}
strat=${4:?strategy}
abl=${5:-none}
budget=${LATHE_BENCH_BUDGET:-steps=3}
tasks=${LATHE_BENCH_TASKS:-layernorm silu row_mean}
mkdir -p "$out"
for t in $tasks; do
  ws="$out/ws-$t/.lathe"
  rm -rf "$out/ws-$t" && mkdir -p "$out/ws-$t"
  cp -r "$src_ws" "$ws"
  rm -rf "$ws/runs" "$ws/cassettes"
  t0=$(date +%s)
  "$lathe" --workspace "$ws" optimize "$t" naive --strategy "$strat" --ablate "$abl" \
    --budget "$budget" --quick --json > "$out/$t.json" 2> "$out/$t.log"
  echo "$t exit $? in $(( $(date +%s) - t0 )) s" >> "$out/stream.log"
done
