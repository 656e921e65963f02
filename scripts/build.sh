#!/usr/bin/env bash
# Configures (once) and builds Cohort into ./build with Ninja and ccache.
# Usage: scripts/build.sh [extra cmake args...]   (BUILD_DIR and BUILD_TYPE override the defaults)
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build_dir=${BUILD_DIR:-$root/build}
build_type=${BUILD_TYPE:-RelWithDebInfo}
if [ ! -f "$build_dir/build.ninja" ]; then
  cmake -S "$root" -B "$build_dir" -G Ninja -DCMAKE_BUILD_TYPE="$build_type" \
    -DCMAKE_EXPORT_COMPILE_COMMANDS=ON "$@"
fi
cmake --build "$build_dir" -j"${JOBS:-$(nproc)}"
