#!/usr/bin/env bash
# Checks Cohort's module boundaries; exits 1 on any violation. Registered with CTest as
# `boundaries` (label lint).
# Usage: scripts/check-boundaries.sh [SOURCE_ROOT [BUILD_DIR]]
#   SOURCE_ROOT  the tree to check (default: this script's repository)
#   BUILD_DIR    a configured build directory: its link-deps/*.txt (written by tests/CMakeLists.txt
#                from CMake's own LINK_LIBRARIES and INTERFACE_LINK_LIBRARIES) are checked too;
#                without it, only includes are checked.
#
# 1. Includes: every `#include "X/..."` in src/<module>/ (*.h, *.cc) names the module itself or a
#    module it may include (the table below). *_test.cc files, and *_test_fixture.h headers
#    that a module's tests share, may also include testing/.
#    A directory under src/ that is not in the table fails: add new modules to it.
# 2. Links: cohort_scheduler and cohort_cluster link only the model, common and the third-party
#    libraries that those use; cohort_dispatch only those and the scheduler and cluster;
#    cohort_sweep and cohort_slurm only the model and common, cohort_framework only those and
#    cohort_slurm (the SLURM_* variables of a Slurm job); the terminal's libraries no module at
#    all (its server is linked static into any image); cohort_model links
#    no module but common, cohort_metrics none but common and its generated protobuf code, and
#    cohort_common none.
#    (The build itself links each pure library whole with nothing but what it may use:
#    tests/CMakeLists.txt, link_check_*; a call into a module it may not use fails to link.)
# 3. Calls: the pure modules (model, scheduler, cluster, dispatch, framework, sweep, slurm; not
#    their tests) make no clock, environment, file, output, socket or thread calls, nor include
#    the headers for them: time is an input, and everything they do is a function of their
#    arguments.
set -euo pipefail

root=$(cd "${1:-$(dirname "$0")/..}" && pwd)
build_dir=${2:-}

# Which modules each module may include, besides itself ("*": any). Keep in step with the modules
# table of docs/architecture.md, and add every new directory under src/ here.
declare -A allowed=(
  [common]=""
  [os]="common"
  [exec]="slurm model os common"
  [terminal]=""
  [tls]="os common"
  [model]="common"
  [metrics]="common"
  [data]="store model os common"
  [scheduler]="model common"
  [cluster]="model common"
  [framework]="slurm model common"
  [sweep]="model common"
  [slurm]="model common"
  [auth]="model common"
  [state]="model common"
  [store]="model os common"
  [testing]="*"
  [master]="sweep scheduler cluster dispatch state framework auth store model os common"
  [api]="master sweep scheduler cluster dispatch state framework auth store model terminal tls os common"
  [client]="model tls common"
  [agent]="client metrics store model os common"
  [sim]="sweep scheduler cluster dispatch model common"
  [dispatch]="scheduler cluster model common"
  [cli]="client data sim sweep slurm scheduler cluster dispatch model terminal os tls common"
  [cohortd]="*"
)

# What cohort_scheduler and cohort_cluster may link: the model, common, the warning flags, and
# the third-party libraries that model and common use themselves.
pure_links="cohort_model cohort_common cohort_warnings fmt::fmt spdlog::spdlog nlohmann_json::nlohmann_json"

violations=0
fail() {
  echo "$1"
  violations=$((violations + 1))
}
# "a b c" -> "a, b, c"; "" -> "(none)"; "*" -> "anything"
show() {
  case "$1" in
    "") echo "(none)" ;;
    "*") echo "anything" ;;
    *) echo "${1// /, }" ;;
  esac
}
contains() {  # contains "LIST" WORD
  local w
  for w in $1; do [ "$w" = "$2" ] && return 0; done
  return 1
}

# --- 1. includes -------------------------------------------------------------------------------
if [ ! -d "$root/src" ]; then
  echo "check-boundaries: $root/src is not a directory" >&2
  exit 2
fi
cd "$root"
files=0
includes=0
for dir in src/*; do
  [ -d "$dir" ] || continue
  module=${dir#src/}
  if [ -z "${allowed[$module]+set}" ]; then
    fail "src/$module: module $module is not in the table of scripts/check-boundaries.sh (add it there and to docs/architecture.md)"
    continue
  fi
  may=${allowed[$module]}
  while IFS= read -r -d '' file; do
    files=$((files + 1))
    [ "$may" = "*" ] && continue
    may_here=$may
    case "$file" in *_test.cc | *_test_fixture.h) may_here="$may testing" ;; esac
    # lineno:#include "path"
    while IFS=: read -r line text; do
      path=${text#*\"}
      path=${path%%\"*}
      case "$path" in */*) ;; *) continue ;; esac  # "file.h": beside the includer
      includes=$((includes + 1))
      target=${path%%/*}
      [ "$target" = "$module" ] && continue
      contains "$may_here" "$target" && continue
      fail "$file:$line: $module may not include $path (allowed: $(show "$may_here"))"
    done < <(grep -nE '^[[:space:]]*#[[:space:]]*include[[:space:]]*"[^"]+"' "$file" || true)
  done < <(find "$dir" -type f \( -name '*.h' -o -name '*.cc' \) -print0 | sort -z)
done

# --- 2. links ----------------------------------------------------------------------------------
checked_links=""
# check_links TARGET REQUIRED MODE ALLOWED: MODE "exact" allows only ALLOWED; MODE "ours" allows
# any third-party library but, of Cohort's own (cohort_*), only ALLOWED.
check_links() {
  local target=$1 required=$2 mode=$3 allow=$4
  local file="$build_dir/link-deps/$target.txt"
  if [ ! -f "$file" ]; then
    if [ "$required" = required ]; then
      fail "$file: missing (configure $build_dir with CMake first)"
    fi
    return 0
  fi
  checked_links="$checked_links $target"
  local seen="" item
  while IFS= read -r item; do
    item=$(echo "$item" | tr -d '[:space:]')
    case "$item" in "" | "::@"*) continue ;; esac  # empty, or CMake's directory markers
    item=${item#\$<LINK_ONLY:}
    item=${item%>}
    contains "$seen" "$item" && continue
    seen="$seen $item"
    if [ "$mode" = exact ] || [[ "$item" == cohort_* ]]; then
      contains "$allow" "$item" || fail "link: $target links $item (allowed: $(show "$allow"))"
    fi
  done < <(tr ';' '\n' < "$file")
}
if [ -n "$build_dir" ]; then
  check_links cohort_common required ours "cohort_warnings"
  check_links cohort_model required ours "cohort_common cohort_warnings"
  check_links cohort_metrics optional ours "cohort_common cohort_metrics_proto cohort_warnings"
  check_links cohort_scheduler required exact "$pure_links"
  check_links cohort_cluster optional exact "$pure_links"
  check_links cohort_dispatch optional exact "$pure_links cohort_scheduler cohort_cluster"
  check_links cohort_framework optional exact "$pure_links cohort_slurm"
  check_links cohort_sweep optional exact "$pure_links"
  check_links cohort_slurm optional exact "$pure_links"
  # The terminal server is linked static into any image: nothing of Cohort's, not even common.
  check_links cohort_terminal_protocol optional exact "cohort_warnings nlohmann_json::nlohmann_json"
  check_links cohort_terminal_server optional exact "cohort_terminal_protocol cohort_warnings"
fi

# --- 3. calls in the pure modules ----------------------------------------------------------------
pure_modules="model scheduler cluster dispatch framework sweep slurm"
# kind|extended regex, matched against each line with its // comment removed.
forbidden_calls=(
  'clock|(system|steady|high_resolution|utc|file)_clock|(^|[^_[:alnum:]])(gettimeofday|clock_gettime|localtime|gmtime|time)[[:space:]]*\((nullptr|NULL|0)?\)|#[[:space:]]*include[[:space:]]*<(ctime|time\.h|sys/time\.h)>'
  'environment|(^|[^_[:alnum:]])(secure_getenv|getenv|setenv|putenv|unsetenv|environ)([^_[:alnum:]]|$)'
  'file|(^|[^_[:alnum:]])(fopen|freopen|opendir|ifstream|ofstream|fstream)([^_[:alnum:]]|$)|(^|[^_[:alnum:]:.>])(::)?(open|read|write|close|unlink|rename|mkdir|fsync|stat)[[:space:]]*\(|std::filesystem::(exists|status|is_directory|is_regular_file|directory_iterator|recursive_directory_iterator|create_director|remove|rename|copy|file_size|last_write_time|current_path|canonical|temp_directory_path|read_symlink)|#[[:space:]]*include[[:space:]]*<(fstream|cstdio|stdio\.h|fcntl\.h|unistd\.h|dirent\.h|sys/stat\.h)>'
  'output|spdlog::|fmt::print|std::(cout|cerr|clog)|(^|[^_[:alnum:]])printf[[:space:]]*\(|#[[:space:]]*include[[:space:]]*<(iostream|spdlog/[^>]*)>'
  'socket|(^|[^_[:alnum:]:.>])(::)?(socket|connect|bind|listen|accept|getaddrinfo|send|recv)[[:space:]]*\(|#[[:space:]]*include[[:space:]]*<(sys/socket\.h|netinet/[^>]*|arpa/inet\.h|netdb\.h|boost/asio[^>]*|boost/beast[^>]*|curl/[^>]*)>'
  'thread|std::(thread|jthread|async|mutex|shared_mutex|condition_variable)([^_[:alnum:]]|$)|(^|[^_[:alnum:]])pthread_[a-z_]+[[:space:]]*\(|#[[:space:]]*include[[:space:]]*<(thread|future|mutex|shared_mutex|condition_variable|pthread\.h)>'
)
calls=0
for module in $pure_modules; do
  [ -d "src/$module" ] || continue
  while IFS= read -r -d '' file; do
    calls=$((calls + 1))
    for entry in "${forbidden_calls[@]}"; do
      kind=${entry%%|*}
      pattern=${entry#*|}
      # lineno:text, with // comments (and what follows) dropped
      while IFS=: read -r line text; do
        fail "$file:$line: $module is pure and may make no $kind call: ${text#"${text%%[![:space:]]*}"}"
      done < <(sed -e 's@//.*$@@' "$file" | grep -nE -- "$pattern" || true)
    done
  done < <(find "src/$module" -type f \( -name '*.h' -o -name '*.cc' \) ! -name '*_test.cc' \
             ! -name '*_test_fixture.h' -print0 | sort -z)
done

if [ "$violations" -gt 0 ]; then
  echo "check-boundaries: $violations violation(s); the allowed dependencies are in scripts/check-boundaries.sh and docs/architecture.md"
  exit 1
fi
links_note="links not checked (no build directory given)"
[ -n "$build_dir" ] && links_note="links of${checked_links} checked"
echo "check-boundaries: OK ($files files, $includes module includes; $links_note; $calls files of pure modules free of clock, environment, file, output, socket and thread calls)"
