#!/usr/bin/env bash
# A throw-away single-node Ceph with its RADOS Gateway (S3) on 127.0.0.1, from Debian 12's own
# packages (ceph-mon, ceph-osd, radosgw, ceph-common), without systemd, all state in one scratch
# directory. For tests (src/store/ceph_gateway_test_fixture.h) and for trying the S3 store by hand.
# docs/data.md, "How the tests run Ceph".
#
#   scripts/ceph.sh start [DIR]       start one (DIR: default mktemp -d /tmp/cohort-ceph.XXXXXX);
#                                     progress on stderr, then one JSON line on stdout:
#                                     {"endpoint", "access_key", "secret_key", "region",
#                                      "role_arn", "dir"}
#                                     On failure: the daemons started are stopped, DIR/log kept,
#                                     exit 1.
#                                     With CEPH_OWNER_PID=PID in the environment, a watchdog
#                                     stops it once process PID has gone (a test binary killed
#                                     before its teardown leaves no daemons behind).
#   scripts/ceph.sh stop DIR [--keep] stop it (rgw, osd, mon, one at a time) and remove DIR
#
# What makes it start in ~4 s and stop in <1 s (measured; /work/notes/ceph-findings.md):
# - memstore: the OSD keeps objects in RAM (memstore_device_bytes), nothing to format;
# - no ceph-mgr: radosgw does not need one;
# - paxos_propose_interval 0.01: radosgw makes ~10 osdmap changes when it first starts, and each
#   would otherwise wait ~1 s for the monitor to batch proposals;
# - cephx: with auth "none" radosgw never serves (get_initial_auth_request returned -13);
# - the daemons' stdout and stderr go to DIR/log: `J=$(scripts/ceph.sh start)` would otherwise
#   never return, radosgw holding the pipe open;
# - stop signals one daemon at a time (all at once, rgw and osd wait ~5 s for the vanished
#   monitor), and only a pid whose command line names DIR/ceph.conf (a recycled pid is left
#   alone); a zombie counts as stopped.
set -euo pipefail

log() { echo "[ceph.sh $(date +%T)] $*" >&2; }
self="$(cd "$(dirname "$0")" && pwd)/$(basename "$0")"

# alive PID: exists and is not a zombie (daemons outlive this script and are reaped by PID 1
# late; kill -0 succeeds on a zombie).
alive() { [ -r "/proc/$1/stat" ] && [ "$(awk '{print $3}' "/proc/$1/stat" 2>/dev/null)" != Z ]; }

stop() {
  local d=${1:?usage: scripts/ceph.sh stop DIR [--keep]} keep=${2:-}
  [ -f "$d/ceph.conf" ] || { echo "ceph.sh: $d holds no ceph.conf: not a cluster of ceph.sh" >&2; return 1; }
  local n f p i
  for n in rgw mgr osd mon; do
    f="$d/run/$n.pid"
    [ -f "$f" ] || continue
    p=$(cat "$f")
    [ -r "/proc/$p/cmdline" ] && tr '\0' ' ' < "/proc/$p/cmdline" | grep -qF "$d/ceph.conf" || continue
    kill -TERM "$p" 2>/dev/null || continue
    kill -CONT "$p" 2>/dev/null || true  # a paused (SIGSTOP) daemon acts on SIGTERM only once resumed
    for i in $(seq 1 50); do alive "$p" || break; sleep 0.1; done
    if alive "$p"; then
      log "$n (pid $p) ignored SIGTERM for 5 s, sending SIGKILL"
      kill -KILL "$p" 2>/dev/null || true
    fi
  done
  [ "$keep" = "--keep" ] || rm -rf "$d"
}

start() {
  # global: the EXIT trap reads it
  d=${1:-}
  [ -n "$d" ] || d=$(mktemp -d /tmp/cohort-ceph.XXXXXX)
  mkdir -p "$d"
  d=$(cd "$d" && pwd)
  [ ! -e "$d/ceph.conf" ] || { log "$d already holds a cluster"; exit 1; }
  for tool in ceph-mon ceph-osd radosgw radosgw-admin ceph ceph-authtool monmaptool curl python3; do
    command -v "$tool" >/dev/null || { log "$tool is not installed: run scripts/setup.sh"; exit 1; }
  done
  # On any failure: stop what was started, keep the logs.
  trap 'rc=$?; if [ $rc -ne 0 ]; then log "FAILED (exit $rc); logs in $d/log"; stop "$d" --keep; fi' EXIT
  need() {  # fail at once if the daemon we wait on died
    kill -0 "$(cat "$d/run/$1.pid")" 2>/dev/null && alive "$(cat "$d/run/$1.pid")" ||
      { log "$1 died; see $d/log/$1.out and $d/log/"; exit 1; }
  }
  # A port is picked free, released and then bound by the daemon: a small race, fine for tests.
  free_port() {
    python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1]); s.close()'
  }
  local mon_port rgw_port fsid conf
  mon_port=$(free_port)
  rgw_port=$(free_port)
  while [ "$rgw_port" = "$mon_port" ]; do rgw_port=$(free_port); done
  fsid=$(python3 -c 'import uuid; print(uuid.uuid4())')
  mkdir -p "$d"/{mon,osd,rgw,run,log,crash}
  conf="$d/ceph.conf"
  cat > "$conf" <<EOF
[global]
fsid = $fsid
mon_host = v2:127.0.0.1:$mon_port
public_addr = 127.0.0.1
ms_bind_msgr1 = false
ms_bind_msgr2 = true
auth_cluster_required = cephx
auth_service_required = cephx
auth_client_required = cephx
run_dir = $d/run
admin_socket = $d/run/\$cluster-\$name.asok
log_file = $d/log/\$cluster-\$name.log
# the monitor's cluster and audit logs too (by default /var/log/ceph, shared by every cluster)
mon_cluster_log_file = default=$d/log/\$cluster.\$channel.log cluster=$d/log/\$cluster.log
crash_dir = $d/crash
keyring = $d/keyring
mon_data = $d/mon/\$cluster-\$id
osd_data = $d/osd/\$cluster-\$id
rgw_data = $d/rgw/\$cluster-\$id
osd_pool_default_size = 1
osd_pool_default_min_size = 1
mon_allow_pool_size_one = true
# radosgw makes 7-8 pools: 32 PGs each would pass the 250 PGs an OSD may hold
osd_pool_default_pg_num = 8
osd_pool_default_pgp_num = 8
osd_pool_default_pg_autoscale_mode = off
mon_max_pg_per_osd = 1000
osd_crush_chooseleaf_type = 0
mon_warn_on_pool_no_redundancy = false
mon_allow_pool_delete = true
osd_objectstore = memstore
memstore_device_bytes = ${CEPH_MEMSTORE_BYTES:-2147483648}
osd_class_dir = /usr/lib/x86_64-linux-gnu/rados-classes
# a nearly full host disk would otherwise be HEALTH_ERR "mon low on space"
mon_data_avail_warn = 1
mon_data_avail_crit = 1
osd_fast_shutdown = true
debug_ms = 0
paxos_propose_interval = 0.01
paxos_min_wait = 0.001

[client.rgw]
rgw_frontends = beast endpoint=127.0.0.1:$rgw_port
rgw_dns_name = 127.0.0.1
rgw_enable_usage_log = false
# 512 threads by default; a test needs few
rgw_thread_pool_size = 64
# STS AssumeRole with session policies: per-job credentials scoped to a prefix
rgw_s3_auth_use_sts = true
rgw_sts_key = $(python3 -c 'import secrets,string; print("".join(secrets.choice(string.ascii_letters) for _ in range(16)))')
EOF
  local c=(-c "$conf")
  export CEPH_CONF="$conf"
  local i

  log "monitor (port $mon_port) in $d"
  ceph-authtool --create-keyring "$d/keyring" --gen-key -n mon. --cap mon 'allow *' >/dev/null
  ceph-authtool "$d/keyring" --gen-key -n client.admin --cap mon 'allow *' --cap osd 'allow *' \
    --cap mgr 'allow *' >/dev/null
  monmaptool --create --fsid "$fsid" --addv a "[v2:127.0.0.1:$mon_port]" "$d/monmap" >/dev/null
  ceph-mon "${c[@]}" --mkfs -i a --monmap "$d/monmap" --keyring "$d/keyring" 2>>"$d/log/setup.err"
  ceph-mon "${c[@]}" -i a -f >>"$d/log/mon.out" 2>&1 </dev/null &
  echo $! > "$d/run/mon.pid"
  for i in $(seq 1 100); do
    need mon
    ceph "${c[@]}" --connect-timeout 2 mon stat >/dev/null 2>&1 && break
    sleep 0.2
  done
  ceph "${c[@]}" --connect-timeout 5 mon stat >/dev/null

  local osd_uuid osd_id
  osd_uuid=$(python3 -c 'import uuid; print(uuid.uuid4())')
  osd_id=$(ceph "${c[@]}" osd new "$osd_uuid")
  ceph "${c[@]}" auth get-or-create "osd.$osd_id" mon 'allow profile osd' mgr 'allow profile osd' \
    osd 'allow *' >> "$d/keyring"
  mkdir -p "$d/osd/ceph-$osd_id"
  log "osd.$osd_id (memstore)"
  ceph-osd "${c[@]}" -i "$osd_id" --mkfs --osd-uuid "$osd_uuid" 2>>"$d/log/setup.err" >/dev/null
  ceph-osd "${c[@]}" -i "$osd_id" -f >>"$d/log/osd.out" 2>&1 </dev/null &
  echo $! > "$d/run/osd.pid"
  up() {
    ceph "${c[@]}" osd stat -f json 2>/dev/null |
      python3 -c 'import json,sys; sys.exit(0 if json.load(sys.stdin).get("num_up_osds",0)>=1 else 1)'
  }
  for i in $(seq 1 300); do
    need osd
    up && break
    sleep 0.2
  done
  up

  log "radosgw (port $rgw_port)"
  mkdir -p "$d/rgw/ceph-rgw"
  ceph "${c[@]}" auth get-or-create client.rgw mon 'allow rw' osd 'allow rwx' mgr 'allow rw' >> "$d/keyring"
  radosgw "${c[@]}" -n client.rgw -f >>"$d/log/rgw.out" 2>&1 </dev/null &
  echo $! > "$d/run/rgw.pid"
  for i in $(seq 1 300); do
    need rgw
    curl -s -o /dev/null "http://127.0.0.1:$rgw_port/" && break
    sleep 0.2
  done
  curl -sS -o /dev/null "http://127.0.0.1:$rgw_port/"

  # The S3 user, and the role its per-job credentials are issued from (STS AssumeRole): the role
  # may do anything in S3; each job's session policy narrows it to the job's prefix.
  radosgw-admin "${c[@]}" user create --uid test --display-name test > "$d/user.json" 2>>"$d/log/setup.err"
  radosgw-admin "${c[@]}" role create --role-name cohort-jobs --assume-role-policy-doc \
    '{"Version":"2012-10-17","Statement":[{"Effect":"Allow","Principal":{"AWS":["arn:aws:iam:::user/test"]},"Action":["sts:AssumeRole"]}]}' \
    > "$d/role.json" 2>>"$d/log/setup.err"
  radosgw-admin "${c[@]}" role-policy put --role-name cohort-jobs --policy-name s3 --policy-doc \
    '{"Version":"2012-10-17","Statement":[{"Effect":"Allow","Action":["s3:*"],"Resource":["arn:aws:s3:::*"]}]}' \
    >/dev/null 2>>"$d/log/setup.err"
  python3 - "$d" "$rgw_port" <<'PY'
import json, sys
d, port = sys.argv[1], sys.argv[2]
key = json.load(open(d + "/user.json"))["keys"][0]
role = json.load(open(d + "/role.json"))
role = role.get("role", role)  # {"Arn": ...} in 16.2
print(json.dumps({"endpoint": f"http://127.0.0.1:{port}", "access_key": key["access_key"],
                  "secret_key": key["secret_key"], "region": "us-east-1",
                  "role_arn": role["Arn"], "dir": d}))
PY
  if [ -n "${CEPH_OWNER_PID:-}" ]; then
    # Detached from our stdout (a caller reading it must see it close) and from our session.
    setsid bash -c 'while kill -0 "$1" 2>/dev/null; do sleep 1; done
                    [ -f "$2/ceph.conf" ] && "$0" stop "$2"' "$self" "$CEPH_OWNER_PID" "$d" \
      >/dev/null 2>&1 </dev/null &
  fi
  log "up"
}

case "${1:-}" in
  start) shift; start "$@" ;;
  stop) shift; stop "$@" ;;
  *) echo "usage: scripts/ceph.sh start [DIR] | stop DIR [--keep]" >&2; exit 2 ;;
esac
