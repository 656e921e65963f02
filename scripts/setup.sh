#!/usr/bin/env bash
# Installs the Debian 12 packages Cohort needs. Idempotent and non-interactive: packages already
# present are left alone.
#
#   scripts/setup.sh          everything: the build, the tests, the benchmarks, the examples and
#                             the demo
#   scripts/setup.sh --demo   only what scripts/demo.sh needs: the compilers and libraries of the
#                             two binaries, the dashboard's npm, and PyTorch for the example job
set -euo pipefail

demo_packages=(
  build-essential cmake ninja-build ccache pkg-config
  libboost-dev libssl-dev nlohmann-json3-dev libyaml-cpp-dev libsqlite3-dev
  libspdlog-dev libfmt-dev libcli11-dev libprotobuf-dev protobuf-compiler
  # The object store's S3 backend (src/store): HTTP with SigV4 signing, and its XML answers.
  libcurl4-openssl-dev libexpat1-dev
  # cohort data pack writes tar shards (src/data).
  libarchive-dev
  python3 python3-torch procps
)
test_packages=(
  clang-format libgtest-dev libgmock-dev libbenchmark-dev
  # For the PostgreSQL state store of the roadmap; nothing links it yet.
  libpq-dev
  # A real Prometheus scrapes the master in tests/integration/prometheus_test.cc, on a port of
  # its own: where systemd runs, the package also starts a service on :9090, which no test uses.
  prometheus
  # The dashboard's end-to-end test drives Debian's Chromium (web/test/e2e.mjs).
  chromium
  # Steps the master's wall clock in tests/integration/node_loss_test.cc (libfaketime).
  faketime
  # A real S3 server for the object store's tests (scripts/ceph.sh, s3_store_test): a
  # single-node Ceph (monitor, memstore OSD) with its RADOS Gateway, started without systemd in a
  # scratch directory; curl waits for the gateway to answer.
  ceph-mon ceph-osd radosgw ceph-common curl
  # examples/sweep-digits trains on scikit-learn's digits, which the package bundles (no
  # download); the sweep benchmark and integration tests run it.
  python3-sklearn
  # framework: mpi (examples/mpi-allreduce, tests/integration/frameworks_test.cc): Open MPI's
  # mpirun and mpi4py, whose ranks start in workers through cohort-exec.
  openmpi-bin python3-mpi4py
  # Tasks in images (docs/runtimes.md, tests/integration/containers_test.cc): rootful podman with
  # runc (crun refuses hybrid cgroups) and catatonit as the containers' init; a real registry on
  # loopback, and buildah with busybox-static to build the test image without network.
  podman runc crun catatonit buildah docker-registry busybox-static
  # Notebook sessions (docs/runtimes.md, tests/integration/notebook_test.cc): Debian's Jupyter as
  # the task, and its tornado as the test's WebSocket client.
  jupyter-notebook
)
packages=("${demo_packages[@]}")
case "${1:-}" in
  --demo) ;;
  "") packages+=("${test_packages[@]}") ;;
  *) echo "usage: scripts/setup.sh [--demo]" >&2; exit 2 ;;
esac
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
