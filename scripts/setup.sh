#!/usr/bin/env bash
# Installs every Debian 12 package that the build, the tests, the benchmarks and the demo need.
# Idempotent and non-interactive: packages already present are left alone.
set -euo pipefail

packages=(
  build-essential cmake ninja-build ccache pkg-config clang-format
  libboost-dev libssl-dev nlohmann-json3-dev libyaml-cpp-dev libsqlite3-dev libpq-dev
  libspdlog-dev libfmt-dev libcli11-dev libprotobuf-dev protobuf-compiler
  libgtest-dev libgmock-dev libbenchmark-dev
  python3 python3-torch procps
  # A real Prometheus scrapes the master in tests/integration/prometheus_test.cc, on a port of
  # its own: where systemd runs, the package also starts a service on :9090, which no test uses.
  prometheus
  # The dashboard's end-to-end test drives Debian's Chromium (web/test/e2e.mjs).
  chromium
  # Steps the master's wall clock in tests/integration/node_loss_test.cc (libfaketime).
  faketime
)
# The dashboard is built with npm (web/package-lock.json): Debian's Node.js 18 and npm, unless a
# node and npm are there already (NodeSource's nodejs package brings its own npm, and Debian's
# npm package conflicts with it).
command -v node >/dev/null || packages+=(nodejs)
command -v npm >/dev/null || packages+=(npm)

missing=()
for p in "${packages[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
    missing+=("$p")
  fi
done

if [ ${#missing[@]} -eq 0 ]; then
  echo "setup: all ${#packages[@]} packages present"
  exit 0
fi

sudo=""
if [ "$(id -u)" -ne 0 ]; then
  command -v sudo >/dev/null || { echo "setup: run as root or install sudo" >&2; exit 1; }
  sudo="sudo"
fi
echo "setup: installing ${missing[*]}"
export DEBIAN_FRONTEND=noninteractive
$sudo apt-get update -q
$sudo apt-get install -y -q --no-install-recommends "${missing[@]}"
