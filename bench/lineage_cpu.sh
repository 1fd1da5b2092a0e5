#!/usr/bin/env bash
# Issue 6 end to end on the CPU, offline: each shipped CPU expert decomposed by the rule engine
# (init, backward walk, forward re-derivation, induction), then every candidate card tried on the
# held-out tasks (`lathe skills admit`). Prints each lineage, the admission table with its rate
# and cost, and the wall time of each command. Rule-engine results: they show the machinery, not
# what a model would find. Not a test: its numbers go into closing notes.
#
#   bench/lineage_cpu.sh [BUILD_DIR] [OUT_DIR]     (defaults: build, /tmp/lathe-lineage-cpu)
set -uo pipefail
cd "$(dirname "$0")/.."
lathe=${1:-build}/lathe
out=${2:-/tmp/lathe-lineage-cpu}
max_time=${LATHE_BENCH_MAX_TIME:-1}
rm -rf "$out" && mkdir -p "$out"
ws="$out/ws"
total0=$(date +%s)
for t in ${LATHE_BENCH_TASKS:-gemm softmax conv2d}; do
  t0=$(date +%s)
  "$lathe" --workspace "$ws" decompose "$t" expert --proposer rules --max-time "$max_time" \
    > "$out/decompose-$t.txt" 2> "$out/decompose-$t.err"
  echo "decompose $t: exit $? in $(( $(date +%s) - t0 )) s"
  cat "$out/decompose-$t.txt"
  echo
done
t0=$(date +%s)
"$lathe" --workspace "$ws" skills admit --proposer rules --max-time "$max_time" > "$out/admit.txt" 2> "$out/admit.err"
echo "skills admit: exit $? in $(( $(date +%s) - t0 )) s"
cat "$out/admit.txt"
"$lathe" --workspace "$ws" skills list
echo "total: $(( $(date +%s) - total0 )) s"
