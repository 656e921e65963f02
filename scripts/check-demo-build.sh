#!/usr/bin/env bash
# Checks what scripts/demo.sh builds, without building it: a build directory configured as
# `scripts/build.sh --demo` configures one never looks for GoogleTest or Google Benchmark (the demo
# does not install them), has the demo's targets and no test, compiles them in unity batches
# without debug information; and the next full `scripts/build.sh` turns it into a full one.
# Usage: scripts/check-demo-build.sh   (about 10 s: two CMake configures into a temporary directory)
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
problems=()

BUILD_DIR=$tmp COHORT_CONFIGURE_ONLY=1 "$root/scripts/build.sh" --demo >"$tmp.log" 2>&1 ||
  { cat "$tmp.log"; echo "check-demo-build: configuring as the demo does failed" >&2; exit 1; }
if grep -qi '^GTEST\|^GTest_DIR\|^benchmark_DIR' "$tmp/CMakeCache.txt"; then
  problems+=("the demo's configure looked for GoogleTest or Benchmark")
fi
targets=$(cmake --build "$tmp" --target help)
for t in cohortd cohort cohort-run-task; do
  grep -q "^$t:" <<<"$targets" || problems+=("the demo's build has no $t")
done
for t in integration_test api_test e2e_bench; do
  grep -q "^$t:" <<<"$targets" && problems+=("the demo's build has the test or benchmark $t")
done
commands=$(ninja -C "$tmp" -t commands cohortd)
grep -q 'Unity/unity_' <<<"$commands" || problems+=("cohortd is not compiled in unity batches")
grep -q ' -g0' <<<"$commands" || problems+=("cohortd is compiled with debug information")

BUILD_DIR=$tmp COHORT_CONFIGURE_ONLY=1 "$root/scripts/build.sh" >"$tmp.log" 2>&1 ||
  { cat "$tmp.log"; echo "check-demo-build: turning it into a full build failed" >&2; exit 1; }
grep -q "^integration_test:" <<<"$(cmake --build "$tmp" --target help)" ||
  problems+=("a full build after the demo's has no tests")
grep -q ' -g0' <<<"$(ninja -C "$tmp" -t commands cohortd)" &&
  problems+=("a full build after the demo's still compiles without debug information")
rm -f "$tmp.log"

if [ ${#problems[@]} -gt 0 ]; then
  printf 'check-demo-build: %s\n' "${problems[@]}" >&2
  exit 1
fi
echo "check-demo-build: OK (demo: cohortd, cohort, cohort-run-task, unity, -g0, no tests; then full)"
