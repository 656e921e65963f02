#!/usr/bin/env bash
# Simulator speed and memory (docs/performance.md records the figures), each policy in its own
# process:
#   1. ITP cluster04 (15,802 jobs) on 72 nodes x 8 GPUs, three teams of equal guarantees;
#   2. all ten ITP clusters concatenated (69,351 jobs), each cluster a team, quotas by GPU-hours,
#      on 160 nodes x 8 GPUs (the GPU-hours fill 88.8% of it over the trace's span);
#   3. a synthetic trace of 100,000 jobs over 15 unequal teams (sim gen --team-skew 2
#      --team-shapes) at load 0.9 of 64 nodes x 8 GPUs, quotas by GPU-hours.
# Prints one table row per run: wall seconds, scheduling passes, the process's peak memory.
# Usage: bench/sim_itp.sh [--only 1,2,3] [TRACE_DIR]   (default: ../shared/traces/itp-2021)
set -euo pipefail
cd "$(dirname "$0")/.."
only="1,2,3"
if [[ ${1:-} == --only ]]; then
  only=${2:?--only needs a list of 1, 2, 3}
  shift 2
fi
traces="${1:-../shared/traces/itp-2021}"
cohort=build/bin/cohort
[[ -x $cohort ]] || { echo "build first: scripts/build.sh" >&2; exit 1; }
[[ -f $traces/cluster04.csv ]] || { echo "no ITP traces in $traces; pass their directory" >&2; exit 1; }
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
wanted() { [[ ",$only," == *",$1,"* ]]; }
policies=(fifo fifo+backfill las default sjf-oracle srtf-oracle)

printf '%-26s %-14s %8s %10s %12s %10s\n' trace policy jobs passes "wall s" "peak MiB"
run() {  # label trace nodes policy [sim run flags...]
  local label=$1 trace=$2 nodes=$3 policy=$4
  shift 4
  local start end
  start=$(date +%s.%N)
  "$cohort" sim run --trace "$trace" --nodes "$nodes" --policy "$policy" "$@" -o json \
    > "$work/out.json" 2> "$work/err.txt" || { cat "$work/err.txt" >&2; exit 1; }
  end=$(date +%s.%N)
  local jobs passes peak
  jobs=$(grep -m1 -o '[0-9]* jobs (' "$work/err.txt" | grep -o '^[0-9]*')
  passes=$(grep -o '[0-9]* passes' "$work/err.txt" | awk '{s += $1} END {print s}')
  peak=$(grep -o 'peak memory so far [0-9]*' "$work/err.txt" | tail -1 | awk '{print $NF}')
  printf '%-26s %-14s %8s %10s %12.1f %10s\n' "$label" "$policy" "$jobs" "$passes" \
    "$(awk -v a="$start" -v b="$end" 'BEGIN { print b - a }')" "$peak"
}

if wanted 1; then
  for policy in "${policies[@]}"; do
    run "cluster04, 72x8 GPUs" "$traces/cluster04.csv" 72 "$policy" --teams a:192,b:192,c:192
  done
fi
if wanted 2; then
  # One trace of every cluster, ids prefixed by the cluster (they are unique per file only), the
  # cluster as the team.
  sources=()
  for f in "$traces"/cluster*.csv; do sources+=(--trace "$f"); done
  "$cohort" sim concat "${sources[@]}" --out "$work/itp-all.csv" 2> "$work/concat.txt" ||
    { cat "$work/concat.txt" >&2; exit 1; }
  for policy in "${policies[@]}"; do
    run "all ITP, 160x8 GPUs" "$work/itp-all.csv" 160 "$policy" --teams auto
  done
fi
if wanted 3; then
  "$cohort" sim gen --jobs 100000 --seed 1 --teams 15 --team-skew 2 --team-shapes --load 0.9 \
    --cluster-gpus 512 --out "$work/synthetic.csv" 2> /dev/null
  for policy in "${policies[@]}"; do
    run "synthetic 100k, 64x8 GPUs" "$work/synthetic.csv" 64 "$policy" --teams auto
  done
fi
