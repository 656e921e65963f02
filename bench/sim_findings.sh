#!/usr/bin/env bash
# Scheduling quality: replays a matrix of traces x policies x seeds, each run in its own process,
# and prints one markdown table per trace (docs/simulator.md, "Findings harness"):
#   a. ITP 2021, the ten clusters concatenated, each cluster a team (`sim concat`), quotas by
#      GPU-hours (`--teams auto`), on 160 x 8 GPUs (the trace's GPU-hours fill 88.8% of it
#      over its span). Nothing in it is random: one run.
#   b. ITP cluster04 over 15 teams of unequal job counts (`sim split --team-skew 2`, the seed
#      salting the split), quotas by GPU-hours, on 72 x 8 GPUs (86%).
#   c. The Tiresias 60-job sample, one team, on 1 x 8 GPUs: its 7.4 GPU-hours arrive in half an
#      hour, twice what 8 GPUs do (on 16, at 94%, no job waits more than 3 minutes and every
#      policy ties). One run.
#   d. Synthetic: `sim gen` with 15 teams (skew 2, each team its own job shapes), load 0.9 of
#      64 x 8 GPUs, 30,000 jobs, the seed drawing the trace; quotas by GPU-hours.
# Per policy: avg, median, p95 and p99 JCT, p99 wait, preemptions per started job, GPU-hours
# lost to preemption, unfinished jobs, wall seconds and peak MiB of the process (mean, and min-max
# over seeds); with sjf-oracle among the policies, each one's average JCT as a ratio to its; and
# each team's average wait.
#
# Usage: bench/sim_findings.sh [--quick] [--seeds N] [--synthetic-jobs N] [--only a,b,c,d]
#                              [--keep DIR] [--traces DIR] [POLICY ...]
#   POLICY         what `cohort sim run --policy` takes (default: fifo+backfill las default)
#   --quick        a smaller matrix, about a minute for three policies: (a) only cluster02,
#                  cluster06 and cluster10 (8,434 jobs on 25 x 8 GPUs, 88%), (d) 5,000 jobs on
#                  16 x 8 GPUs, two seeds
#   --seeds N      seeds 1..N for (b) and (d) (default 3)
#   --synthetic-jobs N   jobs of (d) (default 30,000; 100,000 takes about 3.5 times as long)
#   --only LIST    only these traces of a, b, c, d
#   --keep DIR     keep every run's JSON, stderr and the manifest there (default: a temporary
#                  directory, removed)
#   --traces DIR   the public traces (default: ../shared/traces)
set -euo pipefail
cd "$(dirname "$0")/.."
usage() { sed -n '2,/^set -euo/p' "$0" | sed '$d' | sed 's/^# \{0,1\}//'; }

quick=0
seeds=""
synthetic_jobs=""
only="a,b,c,d"
keep=""
traces=../shared/traces
policies=()
while (($#)); do
  case "$1" in
    -h | --help) usage; exit 0 ;;
    --quick) quick=1 ;;
    --seeds) seeds=${2:?--seeds needs a number}; shift ;;
    --synthetic-jobs) synthetic_jobs=${2:?--synthetic-jobs needs a number}; shift ;;
    --only) only=${2:?--only needs a list of a, b, c, d}; shift ;;
    --keep) keep=${2:?--keep needs a directory}; shift ;;
    --traces) traces=${2:?--traces needs a directory}; shift ;;
    -*) echo "sim_findings: unknown option $1 (--help lists them)" >&2; exit 2 ;;
    *) policies+=("$1") ;;
  esac
  shift
done
((${#policies[@]})) || policies=(fifo+backfill las default)
[[ $only =~ ^[abcd](,[abcd])*$ ]] || { echo "sim_findings: --only: a list of a, b, c, d, got $only" >&2; exit 2; }
if ((quick)); then
  seeds=${seeds:-2}
  synthetic_jobs=${synthetic_jobs:-5000}
fi
synthetic_jobs=${synthetic_jobs:-30000}
[[ $synthetic_jobs =~ ^[1-9][0-9]*$ ]] ||
  { echo "sim_findings: --synthetic-jobs: a positive integer, got $synthetic_jobs" >&2; exit 2; }
seeds=${seeds:-3}
[[ $seeds =~ ^[1-9][0-9]*$ ]] || { echo "sim_findings: --seeds: a positive integer, got $seeds" >&2; exit 2; }

cohort=build/bin/cohort
python=/usr/bin/python3
[[ -x $cohort ]] || { echo "sim_findings: build first: scripts/build.sh" >&2; exit 1; }
[[ -x $python ]] || { echo "sim_findings: needs $python" >&2; exit 1; }
itp=$traces/itp-2021
[[ -f $itp/cluster04.csv && -f $traces/tiresias-60.csv ]] ||
  { echo "sim_findings: no ITP or Tiresias traces in $traces; pass --traces DIR" >&2; exit 1; }
if [[ -n $keep ]]; then
  mkdir -p "$keep"
  work=$keep
else
  work=$(mktemp -d)
  trap 'rm -rf "$work"' EXIT
fi
manifest=$work/manifest.tsv
: > "$manifest"
wanted() { [[ ",$only," == *",$1,"* ]]; }

# run TRACE_LABEL TITLE SEED FILE NODES: every policy on FILE, each in its own process, with
# quotas from the trace; appends one manifest line per run.
run() {
  local label=$1 title=$2 seed=$3 file=$4 nodes=$5 policy
  for policy in "${policies[@]}"; do
    local base=$work/$label.seed$seed.${policy//+/_}
    local start end
    echo "sim_findings: $label seed $seed $policy" >&2
    start=$(date +%s.%N)
    if ! nice "$cohort" sim run --trace "$file" --nodes "$nodes" --teams auto --seed "$seed" \
      --policy "$policy" -o json > "$base.json" 2> "$base.err"; then
      echo "sim_findings: $label seed $seed $policy failed:" >&2
      cat "$base.err" >&2
      exit 1
    fi
    end=$(date +%s.%N)
    local wall peak
    wall=$(awk -v a="$start" -v b="$end" 'BEGIN { printf "%.2f", b - a }')
    peak=$(grep -o 'peak memory so far [0-9]*' "$base.err" | tail -1 | awk '{print $NF}')
    printf '%s\t%s\t%s\t%s\t%s\t%s\t%s\n' "$label" "$title" "$seed" "$policy" "$wall" "$peak" \
      "$base.json" >> "$manifest"
  done
}

# a. ITP clusters as teams.
if wanted a; then
  sources=()
  if ((quick)); then
    for c in 02 06 10; do sources+=(--trace "$itp/cluster$c.csv"); done
    nodes=25 title="ITP 2021, cluster02, 06 and 10 as three teams, quotas by GPU-hours, 25 x 8 GPUs"
  else
    for f in "$itp"/cluster*.csv; do sources+=(--trace "$f"); done
    nodes=160 title="ITP 2021, ten clusters as ten teams, quotas by GPU-hours, 160 x 8 GPUs"
  fi
  "$cohort" sim concat "${sources[@]}" --out "$work/itp-teams.csv" 2> "$work/itp-teams.err" ||
    { cat "$work/itp-teams.err" >&2; exit 1; }
  run itp-teams "$title" 1 "$work/itp-teams.csv" "$nodes"
fi

# b. cluster04 over 15 unequal teams.
if wanted b; then
  for seed in $(seq 1 "$seeds"); do
    "$cohort" sim split --trace "$itp/cluster04.csv" --teams 15 --team-skew 2 --seed "$seed" \
      --out "$work/cluster04-15.seed$seed.csv" 2> /dev/null
    run cluster04-15 "ITP cluster04 over 15 teams (sim split --team-skew 2), quotas by GPU-hours, 72 x 8 GPUs" \
      "$seed" "$work/cluster04-15.seed$seed.csv" 72
  done
fi

# c. Tiresias.
if wanted c; then
  run tiresias-60 "Tiresias 60-job sample, one team, 1 x 8 GPUs" 1 "$traces/tiresias-60.csv" 1
fi

# d. Synthetic, 15 unequal teams at load 0.9.
if wanted d; then
  if ((quick)); then nodes=16; else nodes=64; fi
  for seed in $(seq 1 "$seeds"); do
    "$cohort" sim gen --jobs "$synthetic_jobs" --seed "$seed" --teams 15 --team-skew 2 \
      --team-shapes --load 0.9 --cluster-gpus $((nodes * 8)) \
      --out "$work/synthetic-15.seed$seed.csv" 2> /dev/null
    run synthetic-15 "Synthetic, $synthetic_jobs jobs over 15 teams (sim gen --team-skew 2 --team-shapes), load 0.9 of $nodes x 8 GPUs, quotas by GPU-hours" \
      "$seed" "$work/synthetic-15.seed$seed.csv" "$nodes"
  done
fi

"$python" bench/sim_findings.py "$manifest"
