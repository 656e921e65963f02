#!/usr/bin/env bash
# The main job: installs what is missing, builds the two binaries and the dashboard (not the
# tests: scripts/test.sh builds those), starts a local Cohort cluster (2 agents with 4 fake GPUs
# each), runs the distributed PyTorch example with 2 workers, follows its logs, prints the job's
# summary, and takes the cluster down again. Exits 0 if the job succeeded.
#
#   COHORT_DEMO_KEEP=1 scripts/demo.sh   # leave the cluster running afterwards
#   COHORT_DEMO_PORT=7421 scripts/demo.sh
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
"$root/scripts/setup.sh" --demo
"$root/scripts/build.sh" --demo

bin="$root/build/bin"
dir="${COHORT_DEMO_DIR:-$root/.cohort/demo}"
port="${COHORT_DEMO_PORT:-7420}"
export COHORT_MASTER="http://127.0.0.1:$port"

"$bin/cohort" down --data-dir "$dir" >/dev/null 2>&1 || true  # leftovers of an interrupted run
if [ "${COHORT_DEMO_KEEP:-0}" != 1 ]; then
  trap '"$bin/cohort" down --data-dir "$dir"' EXIT
fi

echo "== cohort up"
"$bin/cohort" up --agents 2 --gpus-per-agent 4 --port "$port" --data-dir "$dir"
"$bin/cohort" nodes

echo "== cohort submit examples/pytorch-ddp/job.yaml"
id=$("$bin/cohort" submit "$root/examples/pytorch-ddp/job.yaml")
echo "job $id"

echo "== cohort logs -f $id"
"$bin/cohort" logs -f "$id"

echo "== cohort status $id"
"$bin/cohort" status "$id"
"$bin/cohort" wait "$id" --timeout 60
