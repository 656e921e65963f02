#!/usr/bin/env bash
# Simulator speed and memory on the ITP 2021 traces (docs/performance.md records the figures):
#   1. cluster04 (15,802 jobs) on 72 nodes x 8 GPUs, each policy in its own process;
#   2. all ten ITP clusters concatenated (69,351 jobs) on 168 nodes x 8 GPUs, likewise.
# Both with three teams of equal guarantees (jobs spread over them by a hash of their id).
# Prints one table row per run: wall seconds, scheduling passes, the process's peak memory.
# Usage: bench/sim_itp.sh [TRACE_DIR]   (default: ../shared/traces/itp-2021)
set -euo pipefail
cd "$(dirname "$0")/.."
traces="${1:-../shared/traces/itp-2021}"
cohort=build/bin/cohort
[[ -x $cohort ]] || { echo "build first: scripts/build.sh" >&2; exit 1; }
[[ -f $traces/cluster04.csv ]] || { echo "no ITP traces in $traces; pass their directory" >&2; exit 1; }
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

# One trace of every cluster, ids prefixed by the cluster (they are unique per file only). The
# jobs keep no team, so that --teams spreads them over a, b and c as before.
sources=()
for f in "$traces"/cluster*.csv; do sources+=(--trace "$f"); done
"$cohort" sim concat "${sources[@]}" --keep-teams --out "$work/itp-all.csv" 2> "$work/concat.txt" ||
  { cat "$work/concat.txt" >&2; exit 1; }

printf '%-22s %-14s %8s %10s %12s %10s\n' trace policy jobs passes "wall s" "peak MiB"
run() {  # label trace nodes guarantee policy...
  local label=$1 trace=$2 nodes=$3 quota=$4
  shift 4
  local args=() p
  for p in "$@"; do args+=(--policy "$p"); done
  local start end
  start=$(date +%s.%N)
  "$cohort" sim run --trace "$trace" --nodes "$nodes" --teams "a:$quota,b:$quota,c:$quota" \
    "${args[@]}" -o json > "$work/out.json" 2> "$work/err.txt"
  end=$(date +%s.%N)
  local jobs passes peak
  jobs=$(grep -m1 -o '[0-9]* jobs (' "$work/err.txt" | grep -o '^[0-9]*')
  passes=$(grep -o '[0-9]* passes' "$work/err.txt" | awk '{s += $1} END {print s}')
  peak=$(grep -o 'peak memory so far [0-9]*' "$work/err.txt" | tail -1 | awk '{print $NF}')
  printf '%-22s %-14s %8s %10s %12.1f %10s\n' "$label" "$(IFS=,; echo "$*")" "$jobs" "$passes" \
    "$(awk -v a="$start" -v b="$end" 'BEGIN { print b - a }')" "$peak"
}
for policy in fifo fifo+backfill las default; do
  run "cluster04, 72x8 GPUs" "$traces/cluster04.csv" 72 192 "$policy"
done
for policy in fifo fifo+backfill las default; do
  run "all ITP, 168x8 GPUs" "$work/itp-all.csv" 168 448 "$policy"
done
