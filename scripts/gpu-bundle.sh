#!/usr/bin/env bash
# Packs cohortd, cohort and cohort-run-task with the shared libraries they need from this Debian
# machine into one archive, for running scripts/gpu-check.sh on a GPU machine that lacks them
# (another distribution, no Boost or spdlog installed). glibc, libstdc++ and libgcc_s are the
# GPU machine's own, which must be at least as new as this one's; everything else comes along,
# found through the binaries' RPATH ($ORIGIN/../lib), so no LD_LIBRARY_PATH leaks into tasks.
#
#   scripts/gpu-bundle.sh [OUT.tar.xz]         (default: .gpu/cohort-bundle.tar.xz)
#   # there: tar -C /tmp -xJf cohort-bundle.tar.xz
#   #        COHORT_BUILD=/tmp/cohort-bundle scripts/gpu-check.sh
#
# Needs patchelf (apt-get install patchelf) and a build in build/ (COHORT_BUILD to change it).
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
BUILD="${COHORT_BUILD:-$ROOT/build}"
OUT="${1:-$ROOT/.gpu/cohort-bundle.tar.xz}"
BINARIES=(cohortd cohort cohort-run-task)
command -v patchelf > /dev/null || { echo "gpu-bundle: needs patchelf (apt-get install patchelf)" >&2; exit 2; }
STAGE="$(mktemp -d)"
trap 'rm -rf "$STAGE"' EXIT
mkdir -p "$STAGE/cohort-bundle/bin" "$STAGE/cohort-bundle/lib"
for b in "${BINARIES[@]}"; do
  [[ -x "$BUILD/bin/$b" ]] || { echo "gpu-bundle: no $BUILD/bin/$b: ninja -C build ${BINARIES[*]}" >&2; exit 2; }
  strip -o "$STAGE/cohort-bundle/bin/$b" "$BUILD/bin/$b"
  patchelf --force-rpath --set-rpath '$ORIGIN/../lib' "$STAGE/cohort-bundle/bin/$b"
  ldd "$BUILD/bin/$b" | awk '$3 ~ /^\// {print $3}'
done | sort -u | grep -v -E '/(libc|libm|libstdc\+\+|libgcc_s)\.so' | while read -r lib; do
  cp -L "$lib" "$STAGE/cohort-bundle/lib/"
done
mkdir -p "$(dirname "$OUT")"
echo "gpu-bundle: packing $(du -sh "$STAGE/cohort-bundle" | cut -f1) (about a minute and a half)"
tar -C "$STAGE" -cJf "$OUT" cohort-bundle
echo "gpu-bundle: $OUT ($(du -h "$OUT" | cut -f1))"
