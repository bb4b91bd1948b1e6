#!/bin/bash
# CPU time a fire costs on one node: scenario 6's child (10,000 one-item jobs every 10 s on the
# embedded registry, 1,000 fires a second), `perf stat -e task-clock` over 20 s of steady fires.
# Usage: benches/fire_cpu.sh <the cluster bench binary>   (cargo bench --bench cluster --no-run)
# Prints the child's result figures and the µs of CPU a fire.
set -euo pipefail
bin=${1:?usage: benches/fire_cpu.sh <cluster bench binary>}
out=$(mktemp)
"$bin" --child versus system=shardcron jobs=10000 seconds=26 >"$out" 2>/dev/null &
pid=$!
sleep 6 # registration and sharding (about 2 s), then a second of warm-up
ms=$(perf stat -x, -e task-clock -p "$pid" -- sleep 20 2>&1 | grep task-clock | cut -d, -f1)
wait "$pid"
figures=$(tail -1 "$out" | tr ' ' '\n' | grep -E 'p50|p99|heap_inuse|rss' | tr '\n' ' ')
rm -f "$out"
echo "$figures us_per_fire=$(echo "scale=1; $ms * 1000 / 20000" | bc)"
