#!/usr/bin/env bash
# Configures (once) and builds Cohort into ./build with Ninja and ccache.
#
#   scripts/build.sh [extra cmake args...]   everything: binaries, dashboard, tests, benchmarks
#   scripts/build.sh --demo                  only what scripts/demo.sh runs: cohortd, cohort (with
#                                            cohort-run-task) and the dashboard, without debug
#                                            information
#
# BUILD_DIR and BUILD_TYPE override the defaults; JOBS the parallelism; COHORT_CONFIGURE_ONLY=1
# stops after configuring (scripts/check-demo-build.sh). A build directory the demo configured
# (without GoogleTest or debug information) is turned into a full one by the first full build,
# which then compiles everything again.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build_dir=${BUILD_DIR:-$root/build}
build_type=${BUILD_TYPE:-RelWithDebInfo}
demo=0
if [ "${1:-}" = --demo ]; then
  demo=1
  shift
fi

if [ ! -f "$build_dir/build.ninja" ]; then
  full=ON
  [ $demo = 1 ] && full=OFF
  cmake -S "$root" -B "$build_dir" -G Ninja -DCMAKE_BUILD_TYPE="$build_type" \
    -DCMAKE_EXPORT_COMPILE_COMMANDS=ON -DCOHORT_TESTS=$full -DCOHORT_DEBUG_INFO=$full "$@"
elif [ $demo = 0 ] && grep -q '^COHORT_TESTS:BOOL=OFF' "$build_dir/CMakeCache.txt"; then
  cmake -S "$root" -B "$build_dir" -DCOHORT_TESTS=ON -DCOHORT_DEBUG_INFO=ON "$@"
fi
[ "${COHORT_CONFIGURE_ONLY:-0}" = 1 ] && exit 0

if [ $demo = 1 ]; then
  targets=(cohortd cohort)
  # The dashboard's target exists only where npm and node were found (web/CMakeLists.txt).
  if cmake --build "$build_dir" --target help | grep -q '^web:'; then
    targets+=(web)
  fi
  cmake --build "$build_dir" -j"${JOBS:-$(nproc)}" --target "${targets[@]}"
else
  cmake --build "$build_dir" -j"${JOBS:-$(nproc)}"
fi
