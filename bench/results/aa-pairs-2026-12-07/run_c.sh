#!/bin/bash
L=$1; N=$2; T=$3
for i in $(seq 1 $N); do
  rm -rf /tmp/aa/ws-$T
  $L --workspace /tmp/aa/ws-$T eval /work/main/tasks/silu naive --quick --json 2>/dev/null > /tmp/aa/$T-$i.json
  python3 -c "
import json; e=json.load(open('/tmp/aa/$T-$i.json')); e=e.get('evaluation',e)
print('$T', $i, e['outcome'], 'aa', round(e['aa']['ci_low'],3), round(e['aa']['ci_high'],3), 'main', round(e['paired']['ci_low'],3), round(e['paired']['ci_high'],3), 'procs', e['policy']['processes'], 'wall', round(e['wall_seconds'],1), open('/proc/loadavg').read().split()[0])
"
done
