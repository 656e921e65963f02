#!/usr/bin/env bash
# Cohort on real NVIDIA GPUs (issue 27, item 8; docs/performance.md, "Real GPUs").
#
# Starts a throwaway cluster on this machine (one master, one agent that reads its GPUs from the
# real NVML, nothing declared) and checks, printing what it measures:
#   1. `cohort nodes -o json` shows every GPU that nvidia-smi shows, with its model and memory;
#   2. two 1-GPU tasks running at once each see exactly their own GPU in torch.cuda:
#      device_count() == 1, and the CUDA driver's PCI bus id and UUID of that device are those of
#      the GPU the task was given (one task on a 1-GPU machine);
#   3. utilisation shows up for that GPU in `cohort top` (and `cohort nodes -o json`) while the
#      task multiplies matrices;
#   4. examples/pytorch-ddp runs with the NCCL backend, one 1-GPU worker per GPU.
# Exit status: 0 when all hold; 1 on any mismatch, naming it; 2 when it cannot run here (no
# NVIDIA GPU, no binaries, no python whose torch has CUDA), at once. No network; a few minutes.
#
# GPU_CHECK_FAKE=1 runs the same plumbing against the fake NVML (tests/fake_nvml), so that it is
# tested on machines without GPUs (tests/CMakeLists.txt, gpu_check_*): the GPUs expected are the
# fake's, the torch.cuda checks become checks of CUDA_VISIBLE_DEVICES, the matrix task marks its
# GPU busy in the fake's utilisation file, and DDP runs on gloo.
#
# Environment: COHORT_BUILD (the build directory; default build/ beside this script's repo),
# GPU_CHECK_PYTHON (a python with a CUDA build of torch; Debian's python3-torch has none),
# GPU_CHECK_KEEP=1 (keep the cluster's directory and print where), GPU_CHECK_TIMEOUT (seconds for
# the whole run, default 540), GPU_CHECK_FAKE_NVML (the fake library; default from the build).
set -uo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
readonly ROOT
readonly BUILD="${COHORT_BUILD:-$ROOT/build}"
readonly FAKE="${GPU_CHECK_FAKE:-0}"
readonly START=$SECONDS
readonly DEADLINE=$((START + ${GPU_CHECK_TIMEOUT:-540}))
# JSON is read with the system's python, whichever one runs torch.
readonly PY_JSON=/usr/bin/python3

say() { printf 'gpu-check: %s\n' "$*"; }
indent() { sed 's/^/  /'; }
# Cannot run here: exit 2 at once.
unable() {
  printf 'gpu-check: FAIL: %s\n' "$*" >&2
  exit 2
}
FAILURES=0
mismatch() {
  printf 'gpu-check: MISMATCH: %s\n' "$*" >&2
  FAILURES=$((FAILURES + 1))
}
left() { echo $((DEADLINE - SECONDS)); }

# --- What this machine has ----------------------------------------------------------------------
# One line per GPU: index, name, memory MiB, UUID, PCI bus id (nvidia-smi's CSV, no units).
expected_gpus() {
  if [[ "$FAKE" == 1 ]]; then
    local n="${FAKE_NVML_GPUS:-2}" i
    for ((i = 0; i < n; i++)); do
      printf '%d, %s, %s, -, -\n' "$i" "${FAKE_NVML_MODEL:-NVIDIA H100 80GB HBM3}" \
        "${FAKE_NVML_MEMORY_MIB:-81559}"
    done
    return
  fi
  nvidia-smi --query-gpu=index,name,memory.total,uuid,pci.bus_id --format=csv,noheader,nounits
}

if [[ "$FAKE" == 1 ]]; then
  export FAKE_NVML_GPUS="${FAKE_NVML_GPUS:-2}"
  NVML_LIBRARY="${GPU_CHECK_FAKE_NVML:-$BUILD/fake_nvml/libnvidia-ml.so.1}"
  [[ -f "$NVML_LIBRARY" ]] || unable "no fake NVML at $NVML_LIBRARY (build the fake_nvml target)"
else
  if ! command -v nvidia-smi > /dev/null; then
    unable "no NVIDIA GPU: nvidia-smi is not installed (no NVIDIA driver on this machine);" \
      "run this on a machine with NVIDIA GPUs, or GPU_CHECK_FAKE=1 to check the plumbing"
  fi
  if ! SMI="$(nvidia-smi --query-gpu=index --format=csv,noheader 2>&1)" || [[ -z "$SMI" ]]; then
    unable "no NVIDIA GPU: nvidia-smi found none: ${SMI:-no output}"
  fi
  NVML_LIBRARY=libnvidia-ml.so.1
fi
EXPECTED="$(expected_gpus)" || unable "nvidia-smi --query-gpu failed: $EXPECTED"
GPUS=$(grep -c . <<< "$EXPECTED")
say "$GPUS GPU(s) expected:"
indent <<< "$EXPECTED"

for bin in cohortd cohort; do
  [[ -x "$BUILD/bin/$bin" ]] || unable "no $BUILD/bin/$bin: build it (ninja -C build cohortd cohort)"
done
readonly COHORTD="$BUILD/bin/cohortd" COHORT_BIN="$BUILD/bin/cohort"

# A python with torch: with CUDA on real GPUs (Debian's python3-torch is CPU-only).
find_python() {
  local want_cuda=$1 p
  for p in ${GPU_CHECK_PYTHON:-} python3 /usr/bin/python3 /opt/conda/bin/python \
    /usr/local/bin/python3 "$HOME/.venv/bin/python"; do
    command -v "$p" > /dev/null 2>&1 || continue
    if [[ "$want_cuda" == 1 ]]; then
      "$p" -c 'import torch, sys; sys.exit(0 if torch.cuda.is_available() else 1)' 2> /dev/null \
        && { command -v "$p"; return 0; }
    else
      "$p" -c 'import torch' 2> /dev/null && { command -v "$p"; return 0; }
    fi
  done
  return 1
}
if [[ "$FAKE" == 1 ]]; then
  PY="$(find_python 0)" || unable "no python with torch (apt install python3-torch)"
else
  PY="$(find_python 1)" || unable "no python whose torch sees CUDA (Debian's python3-torch is" \
    "CPU-only): set GPU_CHECK_PYTHON to one that has a CUDA build of torch"
fi
say "python: $PY ($("$PY" -c 'import torch; print("torch", torch.__version__, "CUDA", torch.version.cuda)'))"

# --- The cluster --------------------------------------------------------------------------------
DIR="$(mktemp -d /tmp/cohort-gpu-check.XXXXXX)"
chmod 755 "$DIR"
PIDS=()
cleanup() {
  local pid
  for pid in "${PIDS[@]}"; do kill -TERM "$pid" 2> /dev/null; done
  for pid in "${PIDS[@]}"; do wait "$pid" 2> /dev/null; done
  if [[ "${GPU_CHECK_KEEP:-0}" == 1 ]]; then
    say "kept $DIR (master.log, agent.log)"
  else
    rm -rf "$DIR"
  fi
}
trap cleanup EXIT

PORT="$("$PY_JSON" -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')"
export COHORT_MASTER="http://127.0.0.1:$PORT"
"$COHORTD" master --data-dir "$DIR/master" --listen "127.0.0.1:$PORT" > "$DIR/master.log" 2>&1 &
PIDS+=($!)
for _ in $(seq 200); do
  [[ -s "$DIR/master/admin-token" && -s "$DIR/master/join-token" ]] && break
  sleep 0.05
done
[[ -s "$DIR/master/admin-token" ]] || { tail "$DIR/master.log"; unable "the master did not start"; }
COHORT_TOKEN="$(cat "$DIR/master/admin-token")"
export COHORT_TOKEN

AGENT_ENV=()
if [[ "$FAKE" == 1 ]]; then
  UTIL_FILE="$DIR/gpu-load"
  : > "$UTIL_FILE"
  chmod 666 "$UTIL_FILE"
  AGENT_ENV=(env "FAKE_NVML_UTILIZATION_FILE=$UTIL_FILE")
fi
ROOT_TASKS=()
[[ "$(id -u)" == 0 ]] && ROOT_TASKS=(--allow-root-tasks)
"${AGENT_ENV[@]}" "$COHORTD" agent --master "$COHORT_MASTER" --name gpu-check \
  --data-dir "$DIR/agent" --join-token-file "$DIR/master/join-token" \
  --nvml-library "$NVML_LIBRARY" --sample-interval 1s "${ROOT_TASKS[@]}" \
  > "$DIR/agent.log" 2>&1 &
PIDS+=($!)

cohort() { "$COHORT_BIN" "$@"; }
# Reads JSON on stdin and prints what the python expression `$1` makes of it (as `d`).
json() { "$PY_JSON" -c "import json, sys; d = json.load(sys.stdin); $1"; }

NODES=""
while ((SECONDS < DEADLINE)); do
  NODES="$(cohort nodes -o json 2> /dev/null)" \
    && [[ "$(json 'print(len(d["nodes"]))' <<< "$NODES" 2> /dev/null)" == 1 ]] && break
  sleep 0.2
done
[[ -n "$NODES" ]] || { tail "$DIR/agent.log"; unable "the agent did not register"; }

# --- 1. The GPUs as cohort nodes shows them -----------------------------------------------------
SHOWN="$(json '
for g in d["nodes"][0]["gpus"]:
    print("{}, {}, {}, {}, {}".format(g["index"], g["model"], g["memory_bytes"] // 1048576,
                                      g.get("uuid", ""), g.get("pci_bus_id", "")))' <<< "$NODES")"
say "cohort nodes shows:"
indent <<< "$SHOWN"
say "GPU source: $(json 'print(d["nodes"][0].get("gpu_source", "?"))' <<< "$NODES")"
# Model and memory must agree for each index (UUIDs and bus ids too where nvidia-smi gives them).
COMPARED="$("$PY_JSON" - "$EXPECTED" "$SHOWN" << 'EOF'
import sys
def rows(text):
    return {r[0]: r for r in (tuple(f.strip() for f in l.split(",")) for l in text.splitlines() if l.strip())}
want, got = rows(sys.argv[1]), rows(sys.argv[2])
for i in sorted(set(want) | set(got), key=int):
    w, g = want.get(i), got.get(i)
    if not w or not g:
        print(f"GPU {i}: {'not shown by cohort nodes' if w else 'shown by cohort nodes, not by nvidia-smi'}")
        continue
    if w[1] != g[1]:
        print(f"GPU {i}: model {g[1]!r}, nvidia-smi says {w[1]!r}")
    if abs(int(w[2]) - int(g[2])) > 1:
        print(f"GPU {i}: memory {g[2]} MiB, nvidia-smi says {w[2]} MiB")
    if w[3] != "-" and w[3].lower() != g[3].lower():
        print(f"GPU {i}: UUID {g[3]}, nvidia-smi says {w[3]}")
    if w[4] != "-" and w[4].lower().lstrip("0") != g[4].lower().lstrip("0"):
        print(f"GPU {i}: PCI bus id {g[4]}, nvidia-smi says {w[4]}")
EOF
)"
if [[ -n "$COMPARED" ]]; then
  while read -r line; do mismatch "cohort nodes: $line"; done <<< "$COMPARED"
else
  say "1. cohort nodes: $GPUS GPU(s), model and memory as nvidia-smi says: ok"
fi

# --- 2 and 3. Each task sees its own GPU; a busy one shows in cohort top ------------------------
cat > "$DIR/probe.py" << 'EOF'
# One task of gpu-check.sh: prints what it sees of its GPUs as one JSON line, then, on rank 0,
# keeps its GPU busy for a while (the others idle as long, so that both hold their GPUs at once).
import ctypes, json, os, sys, time

fake = os.environ.get("GPU_CHECK_FAKE") == "1"
seconds = float(sys.argv[1])
rank = int(os.environ["COHORT_TASK_RANK"])
seen = {"rank": rank, "cuda_visible_devices": os.environ.get("CUDA_VISIBLE_DEVICES")}
if not fake:
    import torch
    seen["device_count"] = torch.cuda.device_count()
    seen["name"] = torch.cuda.get_device_name(0) if seen["device_count"] else None
    # The CUDA driver's own view of device 0, which CUDA_VISIBLE_DEVICES renumbers.
    cuda = ctypes.CDLL("libcuda.so.1")
    dev = ctypes.c_int()
    bus = ctypes.create_string_buffer(64)
    uuid = (ctypes.c_ubyte * 16)()
    if cuda.cuInit(0) == 0 and cuda.cuDeviceGet(ctypes.byref(dev), 0) == 0:
        if cuda.cuDeviceGetPCIBusId(bus, 64, dev) == 0:
            seen["pci_bus_id"] = bus.value.decode()
        if cuda.cuDeviceGetUuid(uuid, dev) == 0:
            h = bytes(uuid).hex()
            seen["uuid"] = f"GPU-{h[:8]}-{h[8:12]}-{h[12:16]}-{h[16:20]}-{h[20:]}"
print(json.dumps(seen), flush=True)

end = time.time() + seconds
if rank != 0:
    time.sleep(seconds)
elif fake:
    # The fake NVML's utilisation file stands for the GPU being busy.
    with open(os.environ["GPU_CHECK_UTIL_FILE"], "a") as f:
        f.write(f"{os.environ['CUDA_VISIBLE_DEVICES']} 97 1073741824\n")
    time.sleep(seconds)
else:
    x = torch.randn(8192, 8192, device="cuda")
    while time.time() < end:
        y = x @ x
        torch.cuda.synchronize()
EOF
chmod 644 "$DIR/probe.py"
PROBES=$((GPUS >= 2 ? 2 : 1))
BURN_SECONDS=90
FAKE_ENV=""
[[ "$FAKE" == 1 ]] && FAKE_ENV="GPU_CHECK_FAKE: \"1\", GPU_CHECK_UTIL_FILE: \"$UTIL_FILE\""
cat > "$DIR/probe.yaml" << EOF
name: gpu-check-probe
tasks:
  - role: probe
    replicas: $PROBES
    resources: {gpus: 1, cpus: 1, memory: 4Gi}
    command: [$PY, probe.py, "$BURN_SECONDS"]
    workdir: $DIR
    env: {$FAKE_ENV}
restart: {on: []}
max_runtime: 5m
EOF
PROBE_JOB="$(cohort submit "$DIR/probe.yaml")" || unable "cohort submit of the probe job failed"
say "probe job $PROBE_JOB: $PROBES task(s) of 1 GPU, at once"

# Waits until every probe task has printed its line; prints the lines.
probe_lines() {
  local out
  while ((SECONDS < DEADLINE)); do
    out="$(cohort logs "$PROBE_JOB" 2> /dev/null | grep -o '{"rank".*')"
    if [[ "$(grep -c . <<< "$out")" -ge "$PROBES" ]]; then
      echo "$out"
      return 0
    fi
    local state
    state="$(cohort status "$PROBE_JOB" -o json 2> /dev/null | json 'print(d["state"])' 2> /dev/null)"
    if [[ "$state" == FAILED || "$state" == KILLED || "$state" == SUCCEEDED ]]; then
      cohort status "$PROBE_JOB" >&2
      cohort logs "$PROBE_JOB" >&2
      return 1
    fi
    sleep 0.5
  done
  return 1
}
if ! LINES="$(probe_lines)"; then
  mismatch "the probe tasks did not report what they see (job $PROBE_JOB); see above"
else
  JOB_JSON="$(cohort status "$PROBE_JOB" -o json)"
  ASSIGNED="$(json '
for t in d["tasks"]:
    print(t["rank"], t["node"], ",".join(str(g) for g in t["gpus"]))' <<< "$JOB_JSON")"
  say "the tasks were given (rank node GPU):"
  indent <<< "$ASSIGNED"
  say "the tasks saw:"
  indent <<< "$LINES"
  ISOLATION="$("$PY_JSON" - "$FAKE" "$ASSIGNED" "$LINES" "$NODES" << 'EOF'
import json, sys
fake = sys.argv[1] == "1"
given = {int(r): g for r, _, g in (l.split() for l in sys.argv[2].splitlines())}
gpus = {str(g["index"]): g for g in json.loads(sys.argv[4])["nodes"][0]["gpus"]}
def bus(text):  # NVML writes an 8-digit domain, CUDA a 4-digit one
    domain, rest = text.lower().split(":", 1)
    return int(domain, 16), rest
for seen in map(json.loads, sys.argv[3].splitlines()):
    rank, mine = seen["rank"], given.get(seen["rank"])
    if seen["cuda_visible_devices"] != mine:
        print(f"rank {rank}: CUDA_VISIBLE_DEVICES={seen['cuda_visible_devices']}, given GPU {mine}")
    if fake:
        continue
    if seen.get("device_count") != 1:
        print(f"rank {rank}: torch.cuda.device_count() is {seen.get('device_count')}, not 1")
        continue
    want = gpus.get(mine, {})
    if "pci_bus_id" not in seen or bus(seen["pci_bus_id"]) != bus(want.get("pci_bus_id", "0:?")):
        print(f"rank {rank}: CUDA device 0 is at PCI {seen.get('pci_bus_id')}, GPU {mine} at {want.get('pci_bus_id')}")
    if seen.get("uuid", "").lower() != want.get("uuid", "").lower():
        print(f"rank {rank}: CUDA device 0 has UUID {seen.get('uuid')}, GPU {mine} {want.get('uuid')}")
if len(set(given.values())) != len(given):
    print(f"two tasks were given the same GPU: {given}")
EOF
)"
  if [[ -n "$ISOLATION" ]]; then
    while read -r line; do mismatch "isolation: $line"; done <<< "$ISOLATION"
  else
    say "2. isolation: each task sees exactly its own GPU: ok"
  fi

  # 3. The busy GPU (rank 0's) as cohort top shows it (the UTIL of GET /api/v1/nodes, which
  # cohort nodes -o json prints), within 30 s; the other GPUs' as they were then.
  BUSY_NODE="$(awk '$1 == 0 {print $2}' <<< "$ASSIGNED")"
  BUSY_GPU="$(awk '$1 == 0 {print $3}' <<< "$ASSIGNED")"
  UTIL=""
  UNTIL=$((SECONDS + 30))
  while ((SECONDS < UNTIL && SECONDS < DEADLINE)); do
    ALL_UTIL="$(cohort nodes -o json 2> /dev/null | json '
for n in d["nodes"]:
    for g in n["gpus"]:
        u = g.get("utilization")
        print(n["id"], g["index"], "" if u is None else u)' 2> /dev/null)"
    UTIL="$(awk -v n="$BUSY_NODE" -v g="$BUSY_GPU" '$1 == n && $2 == g {print $3}' <<< "$ALL_UTIL")"
    [[ -n "$UTIL" && "$UTIL" -ge 20 ]] && break
    sleep 1
  done
  say "utilisation (node GPU percent):"
  indent <<< "$ALL_UTIL"
  cohort top --once | indent
  if [[ -n "$UTIL" && "$UTIL" -ge 20 ]]; then
    say "3. utilisation: GPU $BUSY_GPU of $BUSY_NODE at ${UTIL}% while it multiplies matrices: ok"
  else
    mismatch "utilisation: GPU $BUSY_GPU of $BUSY_NODE shows '${UTIL:-nothing}' while it" \
      "multiplies matrices (want at least 20%)"
  fi
fi
cohort kill "$PROBE_JOB" > /dev/null 2>&1
cohort wait "$PROBE_JOB" --timeout 60 > /dev/null 2>&1

# --- 4. DDP across the GPUs ---------------------------------------------------------------------
WANT_BACKEND=nccl
[[ "$FAKE" == 1 ]] && WANT_BACKEND=gloo
cat > "$DIR/ddp.yaml" << EOF
name: gpu-check-ddp
framework: pytorch
tasks:
  - role: worker
    replicas: $GPUS
    resources: {gpus: 1, cpus: 1, memory: 4Gi}
    command: [$PY, train.py, --steps, "30"]
    workdir: $ROOT/examples/pytorch-ddp
restart: {on: []}
max_runtime: 5m
EOF
DDP_JOB="$(cohort submit "$DIR/ddp.yaml")" || unable "cohort submit of the DDP job failed"
say "DDP job $DDP_JOB: examples/pytorch-ddp, $GPUS worker(s) of 1 GPU"
cohort wait "$DDP_JOB" --timeout "$(left)" > /dev/null 2>&1
DDP_STATE="$(cohort status "$DDP_JOB" -o json | json 'print(d["state"])')"
DDP_LOGS="$(cohort logs "$DDP_JOB" 2> /dev/null)"
DONE="$(grep -o 'done: world_size=.*' <<< "$DDP_LOGS" | head -1)"
if [[ "$DDP_STATE" != SUCCEEDED ]]; then
  mismatch "DDP: job $DDP_JOB ended $DDP_STATE; last lines:"
  tail -20 <<< "$DDP_LOGS" >&2
elif [[ "$DONE" != *"world_size=$GPUS backend=$WANT_BACKEND "* ]]; then
  mismatch "DDP: wanted world_size=$GPUS backend=$WANT_BACKEND, rank 0 says: ${DONE:-nothing}"
else
  say "4. DDP: $DONE: ok"
fi

say "took $((SECONDS - START)) s"
if ((FAILURES > 0)); then
  say "FAILED: $FAILURES mismatch(es)"
  exit 1
fi
say "all checks passed"
