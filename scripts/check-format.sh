#!/usr/bin/env bash
# Checks that every tracked C and C++ file (*.h, *.cc, *.c) is formatted as .clang-format says;
# lists the files that are not. Registered with CTest as `format` (label lint).
# Usage: scripts/check-format.sh [--fix]   (--fix reformats the offending files in place)
# CLANG_FORMAT overrides the clang-format binary (default: Debian 12's, from scripts/setup.sh).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
clang_format=${CLANG_FORMAT:-clang-format}
fix=0
case "${1:-}" in
  "") ;;
  --fix) fix=1 ;;
  *) echo "usage: scripts/check-format.sh [--fix]" >&2; exit 2 ;;
esac
if ! command -v "$clang_format" >/dev/null; then
  echo "check-format: $clang_format not found (scripts/setup.sh installs it)" >&2
  exit 2
fi

if git rev-parse --is-inside-work-tree >/dev/null 2>&1; then
  mapfile -t files < <(git ls-files -- '*.h' '*.cc' '*.c')
else
  mapfile -t files < <(find src tests bench -type f \( -name '*.h' -o -name '*.cc' -o -name '*.c' \) | sort)
fi

bad=()
for f in "${files[@]}"; do
  [ -f "$f" ] || continue  # tracked but deleted in the working tree
  "$clang_format" --dry-run --Werror "$f" >/dev/null 2>&1 || bad+=("$f")
done

if [ ${#bad[@]} -eq 0 ]; then
  echo "check-format: OK (${#files[@]} files, $("$clang_format" --version))"
  exit 0
fi
if [ "$fix" = 1 ]; then
  "$clang_format" -i "${bad[@]}"
  printf 'check-format: reformatted %s\n' "${bad[@]}"
  exit 0
fi
echo "check-format: ${#bad[@]} file(s) not formatted as .clang-format says:"
printf '  %s\n' "${bad[@]}"
echo "Fix with: clang-format -i FILE...   or: scripts/check-format.sh --fix"
exit 1
