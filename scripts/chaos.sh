#!/usr/bin/env bash
# The chaos test (scripts/chaos.py) niced, against ./build: the machine is shared, and a test
# that measures latency should not take the CPU from everyone else's builds.
# Usage: scripts/chaos.sh [--duration 600] [--seed N] [other chaos.py options; --help lists them]
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
exec nice -n "${CHAOS_NICE:-10}" /usr/bin/python3 "$root/scripts/chaos.py" \
  --bin-dir "${BUILD_DIR:-$root/build}/bin" "$@"
