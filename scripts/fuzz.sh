#!/usr/bin/env bash
# Builds the libFuzzer targets of fuzz/ with clang, ASan and UBSan into ./build-fuzz, runs each
# for a while, and prints a table of what happened (docs/fuzzing.md). Exits 1 on any finding:
# a crash, a hang, an out-of-memory, a leak, a sanitizer report or a broken property.
#
# Usage: scripts/fuzz.sh [--time SECONDS] [--merge] [--build-only] [TARGET...]
#   --time S       seconds per target (default 60)
#   --merge        afterwards, add the new inputs that reach new code to fuzz/corpus/TARGET
#   --build-only   build, do not run
#   TARGET         e.g. job_spec api (default: every fuzz/*_fuzzer.cc)
# Environment: FUZZ_BUILD_DIR (default ./build-fuzz), FUZZ_RSS_MB (default 2048), FUZZ_TIMEOUT
# (seconds one input may take before it counts as a hang, default 2), JOBS (build jobs).
# Runs niced: the fuzzers take a whole core each, one target at a time.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build_dir=${FUZZ_BUILD_DIR:-$root/build-fuzz}
rss_mb=${FUZZ_RSS_MB:-2048}
hang_s=${FUZZ_TIMEOUT:-2}
time_s=60
merge=0
build_only=0
targets=()
while [ $# -gt 0 ]; do
  case "$1" in
    --time) time_s=$2; shift 2 ;;
    --merge) merge=1; shift ;;
    --build-only) build_only=1; shift ;;
    -h | --help) sed -n '2,14p' "$0"; exit 0 ;;
    -*) echo "fuzz.sh: unknown option $1" >&2; exit 2 ;;
    *) targets+=("${1%_fuzzer}"); shift ;;
  esac
done
if [ ${#targets[@]} -eq 0 ]; then
  for f in "$root"/fuzz/*_fuzzer.cc; do
    name=$(basename "$f" _fuzzer.cc)
    targets+=("$name")
  done
fi
for t in "${targets[@]}"; do
  [ -f "$root/fuzz/${t}_fuzzer.cc" ] || { echo "fuzz.sh: no target $t (fuzz/${t}_fuzzer.cc)" >&2; exit 2; }
done

# clang and libFuzzer (Debian: clang and libclang-rt-14-dev).
if ! command -v clang++ >/dev/null ||
  ! echo 'extern "C" int LLVMFuzzerTestOneInput(const char*, long) { return 0; }' |
  clang++ -x c++ -fsanitize=fuzzer - -o /dev/null 2>/dev/null; then
  sudo=""
  [ "$(id -u)" -eq 0 ] || sudo="sudo"
  echo "fuzz.sh: installing clang and libFuzzer"
  $sudo apt-get update -q
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -q --no-install-recommends \
    clang libclang-rt-14-dev
fi

if [ ! -f "$build_dir/build.ninja" ]; then
  cmake -S "$root" -B "$build_dir" -G Ninja -DCMAKE_C_COMPILER=clang -DCMAKE_CXX_COMPILER=clang++ \
    -DCOHORT_FUZZ=ON -DCOHORT_WERROR=OFF -DCMAKE_BUILD_TYPE=RelWithDebInfo
fi
nice cmake --build "$build_dir" -j"${JOBS:-$(nproc)}" --target "${targets[@]/%/_fuzzer}"
[ "$build_only" = 1 ] && exit 0

# One run per target under build-fuzz/runs/TARGET: new inputs go to corpus/ there (the
# committed corpus is only read), findings to artifacts/, libFuzzer's output to log.
stat() {  # stat NAME LOG: the value of libFuzzer's final "stat::NAME:"
  grep -a "^stat::$1:" "$2" | tail -1 | awk '{print $2}'
}
count() {  # count PATTERN LOG
  grep -a -c -E "$1" "$2" || true
}
results=()
findings=0
total_execs=0
for t in "${targets[@]}"; do
  run="$build_dir/runs/$t"
  rm -rf "$run"
  mkdir -p "$run/corpus" "$run/artifacts"
  dict=()
  [ -f "$root/fuzz/$t.dict" ] && dict=(-dict="$root/fuzz/$t.dict")
  # fuzz/TARGET.options: more libFuzzer flags for that target, one per line, # for comments.
  options=()
  if [ -f "$root/fuzz/$t.options" ]; then
    mapfile -t options < <(grep -v -E '^\s*(#|$)' "$root/fuzz/$t.options")
  fi
  echo "== $t: ${time_s}s"
  set +e
  (cd "$run" && nice -n 19 "$build_dir/bin/${t}_fuzzer" -max_total_time="$time_s" \
    -timeout="$hang_s" -rss_limit_mb="$rss_mb" -print_final_stats=1 \
    -artifact_prefix="$run/artifacts/" "${dict[@]}" "${options[@]}" "$run/corpus" "$root/fuzz/corpus/$t" \
    >"$run/log" 2>&1)
  rc=$?
  set -e
  execs=$(stat number_of_executed_units "$run/log")
  rate=$(stat average_exec_per_sec "$run/log")
  crashes=$(find "$run/artifacts" -name 'crash-*' | wc -l)
  hangs=$(find "$run/artifacts" -name 'timeout-*' | wc -l)
  ooms=$(find "$run/artifacts" -name 'oom-*' | wc -l)
  leaks=$(find "$run/artifacts" -name 'leak-*' | wc -l)
  reports=$(count 'ERROR: (Address|Leak)Sanitizer|runtime error:|property broken' "$run/log")
  n=$((crashes + hangs + ooms + leaks + reports))
  if [ "$rc" -ne 0 ] && [ "$n" -eq 0 ]; then n=1; fi  # it stopped for a reason not counted above
  findings=$((findings + n))
  total_execs=$((total_execs + ${execs:-0}))
  results+=("$t ${execs:-?} ${rate:-?} $crashes $hangs $ooms $leaks $reports $rc")
  if [ "$n" -ne 0 ]; then
    echo "   finding: see $run/log and $run/artifacts/"
    grep -a -E -m4 'ERROR: |runtime error:|property broken|what\(\):' "$run/log" | sed 's/^/   /' || true
  fi
  if [ "$merge" = 1 ]; then
    before=$(find "$root/fuzz/corpus/$t" -type f | wc -l)
    nice -n 19 "$build_dir/bin/${t}_fuzzer" -merge=1 -timeout="$hang_s" -rss_limit_mb="$rss_mb" \
      "${dict[@]}" "$root/fuzz/corpus/$t" "$run/corpus" >"$run/merge.log" 2>&1
    after=$(find "$root/fuzz/corpus/$t" -type f | wc -l)
    echo "   merged $((after - before)) new inputs into fuzz/corpus/$t"
  fi
done

echo
table="$build_dir/fuzz-results.md"
{
  echo "| target | executions | exec/s | crashes | hangs | OOMs | leaks | sanitizer reports |"
  echo "|---|---:|---:|---:|---:|---:|---:|---:|"
  for r in "${results[@]}"; do
    read -r t execs rate crashes hangs ooms leaks reports rc <<<"$r"
    echo "| $t | $execs | $rate | $crashes | $hangs | $ooms | $leaks | $reports |"
  done
  echo "| **total** | **$total_execs** | | | | | | |"
} | tee "$table"
echo
echo "($time_s s per target; the table is also in $table)"
if [ "$findings" -ne 0 ]; then
  echo "fuzz.sh: $findings finding(s)" >&2
  exit 1
fi
