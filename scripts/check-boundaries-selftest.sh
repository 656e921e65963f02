#!/usr/bin/env bash
# Shows that scripts/check-boundaries.sh fails on violations: runs it on small fake trees in a
# temporary directory. Registered with CTest as `boundaries_selftest` (label lint).
set -euo pipefail
check="$(cd "$(dirname "$0")" && pwd)/check-boundaries.sh"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

failures=0
# expect NAME CODE PATTERN ARGS...: the check exits CODE (0, or non-zero for "fail") and its
# output contains the fixed string PATTERN.
expect() {
  local name=$1 code=$2 pattern=$3
  shift 3
  local out rc=0
  out=$(bash "$check" "$@" 2>&1) || rc=$?
  local ok=1
  if [ "$code" = fail ]; then [ "$rc" -ne 0 ] || ok=0; else [ "$rc" -eq "$code" ] || ok=0; fi
  grep -qF -- "$pattern" <<<"$out" || ok=0
  if [ "$ok" = 1 ]; then
    echo "ok: $name"
  else
    echo "FAILED: $name: wanted exit $code and \"$pattern\"; got exit $rc:"
    sed 's/^/    /' <<<"$out"
    failures=$((failures + 1))
  fi
}

# A clean tree: a few modules (cluster, dispatch, ... absent), a test that uses testing/, a
# header included by its bare name.
src=$tmp/clean/src
mkdir -p "$src/common" "$src/model" "$src/scheduler" "$src/testing"
printf '#pragma once\n' >"$src/common/status.h"
printf '#pragma once\n#include "common/status.h"\n' >"$src/model/job.h"
printf '#include "scheduler/scheduler.h"\n#include "model/job.h"\n#include "common/status.h"\n' \
  >"$src/scheduler/scheduler.cc"
printf '#pragma once\n#include "job_order.h"\n#include <vector>\n' >"$src/scheduler/scheduler.h"
printf '#include "scheduler/scheduler.h"\n#include "testing/cluster.h"\n' \
  >"$src/scheduler/scheduler_test.cc"
printf '#include "scheduler/scheduler.h"\n#include "model/job.h"\n' >"$src/testing/cluster.h"
expect "clean tree passes" 0 "check-boundaries: OK" "$tmp/clean"

# The scheduler includes the state store.
cp -r "$tmp/clean" "$tmp/forbidden"
printf '#include "scheduler/scheduler.h"\n\n#include "state/state_store.h"\n' \
  >"$tmp/forbidden/src/scheduler/foo.cc"
expect "forbidden include fails" fail \
  "src/scheduler/foo.cc:3: scheduler may not include state/state_store.h (allowed: model, common)" \
  "$tmp/forbidden"

# testing/ is for tests only.
cp -r "$tmp/clean" "$tmp/testing"
printf '#include "testing/cluster.h"\n' >"$tmp/testing/src/scheduler/helper.h"
expect "testing/ outside a test fails" fail \
  "src/scheduler/helper.h:1: scheduler may not include testing/cluster.h" "$tmp/testing"

# common includes nothing of ours.
cp -r "$tmp/clean" "$tmp/common"
printf '#include "model/job.h"\n' >"$tmp/common/src/common/units.cc"
expect "common including model fails" fail \
  "src/common/units.cc:1: common may not include model/job.h (allowed: (none))" "$tmp/common"

# A module that is not in the table.
cp -r "$tmp/clean" "$tmp/unknown"
mkdir -p "$tmp/unknown/src/widgets"
printf '#pragma once\n' >"$tmp/unknown/src/widgets/widget.h"
expect "module missing from the table fails" fail "module widgets is not in the table" \
  "$tmp/unknown"

# Links, as CMake would write them: a clean set, then the scheduler linking the state store.
mkdir -p "$tmp/build/link-deps"
printf 'fmt::fmt;spdlog::spdlog;cohort_warnings;$<LINK_ONLY:cohort_warnings>\n' \
  >"$tmp/build/link-deps/cohort_common.txt"
printf 'cohort_common;yaml-cpp;cohort_warnings;cohort_common;$<LINK_ONLY:yaml-cpp>\n' \
  >"$tmp/build/link-deps/cohort_model.txt"
printf 'cohort_model;cohort_common;cohort_warnings;cohort_model;$<LINK_ONLY:cohort_warnings>\n' \
  >"$tmp/build/link-deps/cohort_scheduler.txt"
expect "clean links pass" 0 "links of cohort_common cohort_model cohort_scheduler checked" \
  "$tmp/clean" "$tmp/build"
cp -r "$tmp/build" "$tmp/build-bad"
printf 'cohort_model;cohort_common;cohort_warnings;cohort_model;$<LINK_ONLY:cohort_state>\n' \
  >"$tmp/build-bad/link-deps/cohort_scheduler.txt"
printf 'cohort_model;SQLite::SQLite3\n' >"$tmp/build-bad/link-deps/cohort_cluster.txt"
printf 'cohort_common;cohort_scheduler\n' >"$tmp/build-bad/link-deps/cohort_model.txt"
expect "scheduler linking state fails" fail "link: cohort_scheduler links cohort_state" \
  "$tmp/clean" "$tmp/build-bad"
expect "cluster linking SQLite fails" fail "link: cohort_cluster links SQLite::SQLite3" \
  "$tmp/clean" "$tmp/build-bad"
expect "model linking the scheduler fails" fail "link: cohort_model links cohort_scheduler" \
  "$tmp/clean" "$tmp/build-bad"

# Links of the other pure targets: dispatch may link the scheduler and cluster, not the master;
# framework only the model and common.
cp -r "$tmp/build" "$tmp/build-pure"
printf 'cohort_scheduler;cohort_cluster;cohort_model;cohort_common;cohort_warnings\n' \
  >"$tmp/build-pure/link-deps/cohort_dispatch.txt"
printf 'cohort_model;$<LINK_ONLY:cohort_warnings>\n' >"$tmp/build-pure/link-deps/cohort_framework.txt"
expect "dispatch and framework with their own links pass" 0 \
  "links of cohort_common cohort_model cohort_scheduler cohort_dispatch cohort_framework checked" \
  "$tmp/clean" "$tmp/build-pure"
printf 'cohort_scheduler;cohort_cluster;cohort_state\n' >"$tmp/build-pure/link-deps/cohort_dispatch.txt"
printf 'cohort_model;cohort_os\n' >"$tmp/build-pure/link-deps/cohort_framework.txt"
expect "dispatch linking state fails" fail "link: cohort_dispatch links cohort_state" \
  "$tmp/clean" "$tmp/build-pure"
expect "framework linking os fails" fail "link: cohort_framework links cohort_os" \
  "$tmp/clean" "$tmp/build-pure"

# Calls in the pure modules: each kind fails, in a source file; comments, tests and look-alikes
# (std::bind, a member named read, std::filesystem::path) do not.
cp -r "$tmp/clean" "$tmp/calls-ok"
mkdir -p "$tmp/calls-ok/src/dispatch"
cat >"$tmp/calls-ok/src/scheduler/pure.cc" <<'CC'
#include <filesystem>
#include <functional>
// Never reads the clock (std::chrono::system_clock) nor calls getenv(): now is an input.
auto f = std::bind(&Foo::Run, this);
auto p = std::filesystem::path("a/../b").lexically_normal();
int n = reader.read(buf);
Timestamp start_time(Timestamp now);
CC
printf '#include <thread>\nstd::thread t;\nauto now = std::chrono::steady_clock::now();\n' \
  >"$tmp/calls-ok/src/scheduler/pure_test.cc"
expect "pure code, comments and tests pass" 0 "free of clock, environment, file" "$tmp/calls-ok"
# forbidden_call NAME MODULE LINE PATTERN: LINE in src/MODULE/x.cc fails with PATTERN.
forbidden_call() {
  local name=$1 module=$2 line=$3 pattern=$4
  rm -rf "$tmp/calls-bad"
  cp -r "$tmp/clean" "$tmp/calls-bad"
  mkdir -p "$tmp/calls-bad/src/$module"
  printf '#include "model/job.h"\n%s\n' "$line" >"$tmp/calls-bad/src/$module/x.cc"
  expect "$name" fail "$pattern" "$tmp/calls-bad"
}
forbidden_call "the scheduler reading the clock fails" scheduler \
  "Timestamp now = std::chrono::system_clock::now();" \
  "src/scheduler/x.cc:2: scheduler is pure and may make no clock call"
forbidden_call "the model reading the environment fails" model 'const char* home = getenv("HOME");' \
  "src/model/x.cc:2: model is pure and may make no environment call"
forbidden_call "the cluster core opening a file fails" cluster 'std::ifstream in("/etc/nodes");' \
  "src/cluster/x.cc:2: cluster is pure and may make no file call"
forbidden_call "the dispatcher calling open() fails" dispatch 'int fd = ::open(path, O_RDONLY);' \
  "src/dispatch/x.cc:2: dispatch is pure and may make no file call"
forbidden_call "the framework logging fails" framework 'spdlog::info("hello");' \
  "src/framework/x.cc:2: framework is pure and may make no output call"
forbidden_call "the scheduler opening a socket fails" scheduler \
  "int s = socket(AF_INET, SOCK_STREAM, 0);" \
  "src/scheduler/x.cc:2: scheduler is pure and may make no socket call"
forbidden_call "the dispatcher starting a thread fails" dispatch "std::thread worker([] {});" \
  "src/dispatch/x.cc:2: dispatch is pure and may make no thread call"
forbidden_call "the scheduler including <thread> fails" scheduler "#include <thread>" \
  "src/scheduler/x.cc:2: scheduler is pure and may make no thread call"

if [ "$failures" -gt 0 ]; then
  echo "check-boundaries self-test: $failures case(s) failed"
  exit 1
fi
echo "check-boundaries self-test: all cases passed"
