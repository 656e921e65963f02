#!/usr/bin/python3
"""Chaos test of a local Cohort cluster (docs/reliability.md, "Chaos test").

Starts a master and several agents with fake GPUs in a scratch directory, submits a stream of
short jobs (gangs and single tasks) that record every start and end of their tasks, and
meanwhile injects faults at random (seeded) moments: kill -9 of the master, the master paused
past the node timeout, its wall clock stepped (libfaketime), a flood of wrong tokens from the
agents' own address, machine losses, machines that come back wiped, agents paused past the node
timeout, agents killed alone, and log floods. A process of its own checks the master's health every 50 ms. At the end it lets
the stream drain and checks, from the jobs' own records and the API, that no acknowledged job
was lost, no task started twice, no GPU was used by two tasks at once, every job on a lost
machine was requeued in time, and the master kept answering. Exit status: 0 when every check
held, 1 on a violation, 2 when the cluster itself could not be run.

Only the Python standard library; run with /usr/bin/python3.
"""

import argparse
import heapq
import http.client
import json
import multiprocessing
import os
import pwd
import random
import shutil
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections import Counter, defaultdict

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import chaos_check as check  # noqa: E402

# Each task records its start, its end (normal, failed, or on SIGTERM) into starts.log.
# Arguments: $1 starts.log, $2 seconds to run, $3 1 to fail its first attempt (task 0),
# $4 bytes of output to flood the log with. Bash, for $EPOCHREALTIME: a time without a child
# process, which the supervisor's SIGTERM to every process of the task could kill mid-line.
# The trap comes first, so that no SIGTERM leaves a start without an end, and ignores further
# ones (the supervisor signals the group and each process). One echo is one write (O_APPEND),
# so lines never interleave.
TASK_SCRIPT = r'''
f=$1
me="$COHORT_JOB_ID $COHORT_ATTEMPT $COHORT_TASK_INDEX $COHORT_NODE"
trap 'trap "" TERM; echo "$me end $EPOCHREALTIME $CUDA_VISIBLE_DEVICES term" >> "$f"; exit 143' TERM
echo "$me start $EPOCHREALTIME $CUDA_VISIBLE_DEVICES" >> "$f"
if [ "$3" = 1 ] && [ "$COHORT_ATTEMPT" = 1 ] && [ "$COHORT_TASK_INDEX" = 0 ]; then
  echo "$me end $EPOCHREALTIME $CUDA_VISIBLE_DEVICES fail" >> "$f"
  exit 1
fi
if [ "$4" -gt 0 ]; then
  yes "flood from job $me: the quick brown fox jumps over the lazy dog" | head -c "$4"
  head -c 2000000 /dev/zero | tr '\0' x
  echo
fi
sleep "$2" & wait $!
echo "$me end $EPOCHREALTIME $CUDA_VISIBLE_DEVICES ok" >> "$f"
'''

FAULT_KINDS = ("master_kill", "master_pause", "clock_step", "guessing", "machine_loss", "wipe",
               "pause", "agent_kill", "flood")
FAULT_NAMES = {
    "master_kill": "master kill -9 and restart",
    "master_pause": "master paused (SIGSTOP) past the node timeout",
    "clock_step": "master's wall clock stepped (libfaketime)",
    "guessing": "wrong tokens, 5 a second, from the agents' own address",
    "machine_loss": "machine loss (agent and its tasks killed; back later)",
    "wipe": "machine back with a wiped data directory",
    "pause": "agent paused (SIGSTOP) past the node timeout",
    "agent_kill": "agent alone kill -9 and restart",
    "flood": "log flood job",
}


# libfaketime (Debian's faketime package, scripts/setup.sh): the master runs under it, its wall
# clock offset by what FAKETIME_TIMESTAMP_FILE says at each call; its monotonic clock is the
# machine's.
FAKETIME = "/usr/lib/x86_64-linux-gnu/faketime/libfaketimeMT.so.1"


class Infrastructure(Exception):
    """The cluster could not be run at all (not a finding about Cohort)."""


def log(message):
    print(f"[chaos {time.strftime('%H:%M:%S')}] {message}", flush=True)


def parse_seconds(text):
    for unit, scale in (("ms", 0.001), ("s", 1), ("m", 60)):
        if text.endswith(unit) and text[: -len(unit)].replace(".", "", 1).isdigit():
            return float(text[: -len(unit)]) * scale
    raise argparse.ArgumentTypeError(f"{text!r} is not a duration such as 5s or 500ms")


def free_port():
    """A free port below the ephemeral range, so that while the master is down no outgoing
    connection of another program takes it (the master comes back on the same port)."""
    rng = random.Random()
    for _ in range(200):
        port = rng.randint(12000, 19999)
        with socket.socket() as s:
            try:
                s.bind(("127.0.0.1", port))
                return port
            except OSError:
                continue
    raise Infrastructure("no free port in 12000-19999")


def proc_table():
    """pid -> (ppid, command line) of every process."""
    table = {}
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        try:
            with open(f"/proc/{name}/stat") as f:
                stat = f.read()
            with open(f"/proc/{name}/cmdline", "rb") as f:
                cmdline = f.read().replace(b"\0", b" ").decode(errors="replace")
        except OSError:
            continue
        fields = stat[stat.rfind(")") + 2:].split()
        if fields[0] == "Z":
            continue
        table[int(name)] = (int(fields[1]), cmdline)
    return table


def tree(roots, table):
    children = defaultdict(list)
    for pid, (ppid, _) in table.items():
        children[ppid].append(pid)
    out, stack = set(), list(roots)
    while stack:
        pid = stack.pop()
        if pid in out or pid not in table:
            continue
        out.add(pid)
        stack.extend(children[pid])
    return out


class Api:
    """Requests to the master, each on a new connection (the master may be restarted)."""

    def __init__(self, port, token_file):
        self.port = port
        self.token_file = token_file  # the admin token the master writes on its first start

    def request(self, method, path, body=None, headers=None, timeout=10.0):
        headers = dict(headers or {})
        if self.token_file and os.path.exists(self.token_file):
            with open(self.token_file) as f:
                headers["Authorization"] = "Bearer " + f.read().strip()
        conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=timeout)
        try:
            conn.request(method, path, body=body, headers=headers)
            resp = conn.getresponse()
            return resp.status, {k.lower(): v for k, v in resp.getheaders()}, resp.read()
        finally:
            conn.close()

    def get_json(self, path, timeout=10.0):
        status, _, data = self.request("GET", path, timeout=timeout)
        if status != 200:
            raise OSError(f"GET {path}: HTTP {status}: {data[:200]!r}")
        return json.loads(data)

    def all_jobs(self, timeout=10.0):
        """Every job, oldest first: GET /api/v1/jobs answers a page at a time (docs/api.md)."""
        jobs, after = [], ""
        while True:
            page = self.get_json(f"/api/v1/jobs?limit=1000&after={after}", timeout=timeout)
            jobs += page["jobs"]
            if page["next"] is None:
                return jobs
            after = page["next"]


class Cluster:
    """The master and agents, as child processes of this script, and what can be done to them."""

    def __init__(self, args, root):
        self.args = args
        self.root = root
        self.port = free_port()
        self.api = Api(self.port, f"{root}/master/admin-token")
        self.master = None
        self.agents = {f"node-{i}": None for i in range(1, args.agents + 1)}
        self.paused = set()
        # Whether the master is up, for the health probe in its own process: (epoch << 1) | up,
        # the epoch rising at every start and kill of the master. Written by this thread only.
        self.state = multiprocessing.get_context("fork").RawValue("q", 0)
        self.master_ups = []  # when a restarted master listened again
        self.unexpected = []  # findings about the daemons: exits nobody asked for, and such
        self.pdeathsig = ["setpriv", "--pdeathsig", "KILL", "--"] if shutil.which("setpriv") else []
        self.clock_file = f"{root}/master-clock-offset"
        self.step_clock(0)

    def step_clock(self, seconds):
        """The master's wall clock from now on: the machine's plus `seconds`."""
        with open(self.clock_file + ".new", "w") as f:
            f.write(f"{seconds:+d}\n")
        os.replace(self.clock_file + ".new", self.clock_file)
        return time.time()

    def pause_master(self):
        self.set_master_up(False)  # the health probe does not count what a stopped master misses
        self.master.send_signal(signal.SIGSTOP)
        return time.time()

    def resume_master(self):
        self.master.send_signal(signal.SIGCONT)
        self.set_master_up(True)
        return time.time()

    def spawn(self, args, log_path, env=None):
        # The daemons die with this script (setpriv --pdeathsig), even if it is SIGKILLed.
        with open(log_path, "ab") as out:
            return subprocess.Popen(self.pdeathsig + args, stdout=out, stderr=subprocess.STDOUT,
                                    stdin=subprocess.DEVNULL, env={**os.environ, **(env or {})})

    # The master.

    def start_master(self):
        url_file = f"{self.root}/master.url"
        if os.path.exists(url_file):
            os.unlink(url_file)
        if not os.path.exists(FAKETIME):
            raise Infrastructure(f"no {FAKETIME}: install Debian's faketime (scripts/setup.sh)")
        self.master = self.spawn(
            [f"{self.args.bin_dir}/cohortd", "master", "--data-dir", f"{self.root}/master",
             "--listen", f"127.0.0.1:{self.port}", "--url-file", url_file,
             "--node-timeout", f"{self.args.node_timeout}s", "--log-level", "info"],
            f"{self.root}/master.log",
            env={"LD_PRELOAD": FAKETIME, "FAKETIME_TIMESTAMP_FILE": self.clock_file,
                 "FAKETIME_NO_CACHE": "1", "DONT_FAKE_MONOTONIC": "1"})
        deadline = time.time() + 60
        while not os.path.exists(url_file):
            if self.master.poll() is not None:
                raise Infrastructure(f"the master exited with {self.master.returncode} at start:\n"
                                     + tail(f"{self.root}/master.log"))
            if time.time() > deadline:
                raise Infrastructure("the master did not listen within 60 s:\n"
                                     + tail(f"{self.root}/master.log"))
            time.sleep(0.02)
        self.set_master_up(True)
        return time.time()

    def set_master_up(self, up):
        self.state.value = ((self.state.value >> 1) + 1) << 1 | int(up)

    def kill_master(self):
        self.set_master_up(False)
        t = time.time()
        self.master.send_signal(signal.SIGKILL)
        self.master.wait()
        self.master = None
        return t

    # Agents.

    def agent_dir(self, name):
        return f"{self.root}/{name}"

    def start_agent(self, name):
        i = int(name.split("-")[1])
        first = 40000 + i * 50  # disjoint port ranges; nothing binds them
        self.agents[name] = self.spawn(
            [f"{self.args.bin_dir}/cohortd", "agent", "--master", f"http://127.0.0.1:{self.port}",
             "--name", name, "--data-dir", self.agent_dir(name), "--cpus", "16", "--memory",
             "64Gi", "--gpus", str(self.args.gpus_per_agent), "--ports",
             f"{first}-{first + 49}", "--join-token-file", f"{self.root}/master/join-token",
             "--log-level", "info", "--allow-root-tasks"],
            f"{self.root}/{name}.log")

    def machine_processes(self, name, table):
        """The agent, every task supervisor of this node (found by its command line, which names
        the node's data directory, even without a pid file), and all their descendants."""
        roots = set()
        agent = self.agents.get(name)
        if agent is not None:
            roots.add(agent.pid)
        tasks_dir = f"{self.agent_dir(name)}/tasks/"
        for pid, (_, cmdline) in table.items():
            if "run-task" in cmdline and tasks_dir in cmdline:
                roots.add(pid)
        return tree(roots, table)

    def kill_machine(self, name):
        """The machine dies: everything of it stopped first (so that nothing reacts to the
        others' deaths or starts anything new), then killed. Returns (stopped at, killed at)."""
        t0 = time.time()
        stopped = set()
        while True:
            doomed = self.machine_processes(name, proc_table()) - stopped
            if not doomed:
                break
            for pid in doomed:
                try:
                    os.kill(pid, signal.SIGSTOP)
                except ProcessLookupError:
                    pass
            stopped |= doomed
        for pid in stopped:
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        t1 = time.time()
        agent = self.agents[name]
        if agent is not None:
            agent.wait()
        self.agents[name] = None
        self.paused.discard(name)
        return t0, t1

    def kill_agent(self, name):
        agent = self.agents[name]
        agent.send_signal(signal.SIGKILL)
        agent.wait()
        self.agents[name] = None
        return time.time()

    def pause(self, name):
        self.agents[name].send_signal(signal.SIGSTOP)
        self.paused.add(name)
        return time.time()

    def resume(self, name):
        self.agents[name].send_signal(signal.SIGCONT)
        self.paused.discard(name)
        return time.time()

    def check_daemons(self):
        """A daemon that exited without being killed is a finding (a crash, or the master's
        fail-stop); it is restarted as its supervisor would."""
        if self.master is not None and self.master.poll() is not None:
            self.set_master_up(False)
            code = self.master.returncode
            self.unexpected.append(f"the master exited by itself with status {code}; its log "
                                   f"ends:\n{tail(f'{self.root}/master.log')}")
            log(f"the master exited by itself ({code}); restarting it")
            self.master_ups.append(self.start_master())
        for name, agent in self.agents.items():
            if agent is not None and agent.poll() is not None:
                self.unexpected.append(f"agent {name} exited by itself with status "
                                       f"{agent.returncode}; its log ends:\n"
                                       + tail(f"{self.root}/{name}.log"))
                log(f"agent {name} exited by itself ({agent.returncode}); restarting it")
                self.start_agent(name)

    def wait_ready(self, timeout):
        """Waits until every node is READY; returns those that are not."""
        deadline = time.time() + timeout
        missing = set(self.agents)
        while missing and time.time() < deadline:
            try:
                nodes = self.api.get_json("/api/v1/nodes", timeout=5)["nodes"]
                missing = set(self.agents) - {n["id"] for n in nodes if n["state"] == "READY"}
            except (OSError, ValueError):
                pass
            time.sleep(0.2)
        return missing

    def task_processes(self):
        table = proc_table()
        return {pid: cmd for pid, (_, cmd) in table.items()
                if "run-task" in cmd and f"{self.root}/" in cmd}

    def stop_all(self):
        """SIGTERM to every daemon, SIGKILL to what is left, then every task of this run."""
        for name in list(self.paused):
            self.resume(name)
        if self.master is not None:
            self.master.send_signal(signal.SIGCONT)
        daemons = [p for p in [self.master, *self.agents.values()] if p is not None]
        for p in daemons:
            if p.poll() is None:
                p.send_signal(signal.SIGTERM)
        for p in daemons:
            try:
                p.wait(timeout=10)
            except subprocess.TimeoutExpired:
                p.kill()
                p.wait()
        self.set_master_up(False)
        table = proc_table()
        for pid in tree(self.task_processes(), table):
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass


def tail(path, lines=30):
    try:
        with open(path, errors="replace") as f:
            return "".join(f.readlines()[-lines:])
    except OSError as e:
        return f"({e})"


def probe_health(port, state, stop, path, parent):
    """GET /api/v1/health every 50 ms, in a process of its own so that nothing this script does
    delays a check. A check counts only if the master was up (not deliberately down, not
    restarted) from its start to its answer. One line per check: TIME SECONDS ERROR|-."""
    api = Api(port, None)  # the health check needs no token
    with open(path, "w", buffering=1) as out:
        while not stop.is_set() and os.getppid() == parent:
            began = time.monotonic()
            before = state.value
            if before & 1:
                error = "-"
                try:
                    status, _, _ = api.request("GET", "/api/v1/health", timeout=2.0)
                    if status != 200:
                        error = f"HTTP {status}"
                except OSError as e:
                    error = f"{type(e).__name__}: {e}"
                took = time.monotonic() - began
                if state.value == before:
                    out.write(f"{time.time():.3f} {took:.6f} {error}\n")
            stop.wait(max(0.0, 0.05 - (time.monotonic() - began)))


class HealthProbe:
    def __init__(self, cluster, path):
        context = multiprocessing.get_context("fork")
        self.path = path
        self.stop = context.Event()
        self.process = context.Process(target=probe_health, daemon=True, args=(
            cluster.port, cluster.state, self.stop, path, os.getpid()))

    def start(self):
        self.process.start()

    def finish(self):
        self.stop.set()
        self.process.join(10)

    def samples(self):
        """(wall time, seconds, error or None) of every check."""
        out = []
        with open(self.path) as f:
            for line in f:
                t, took, error = line.rstrip("\n").split(" ", 2)
                out.append((float(t), float(took), None if error == "-" else error))
        return out


class Submitter:
    """The stream of jobs, each submitted with an Idempotency-Key and retried with it until the
    master acknowledges it (through master restarts)."""

    def __init__(self, args, cluster, root):
        self.args = args
        self.cluster = cluster
        self.root = root
        self.rng = random.Random(args.seed * 7919 + 1)  # apart from the faults' generator
        self.lock = threading.Lock()
        self.acknowledged = {}  # key -> job id
        self.replayed = 0
        self.retries = 0
        self.refused = []
        self.count = 0
        self.stop = threading.Event()
        self.threads = []
        self.thread = threading.Thread(target=self.stream, daemon=True)

    def spec(self, name, replicas, seconds, fail_first=False, flood=0):
        command = ["bash", "-c", TASK_SCRIPT, "chaos-task", f"{self.root}/starts.log",
                   f"{seconds:.1f}", "1" if fail_first else "0", str(flood)]
        return {"name": name,
                "tasks": [{"role": "worker", "replicas": replicas,
                           "resources": {"gpus": 1, "cpus": 1, "memory": "1Gi"},
                           "command": command,
                           "env": {"LC_ALL": "C"}}],  # a point in $EPOCHREALTIME, not a comma
                "restart": {"max_attempts": 10, "backoff": "1s", "max_backoff": "2s"},
                "grace_period": "3s"}

    def stream(self):
        while not self.stop.wait(min(4.0, self.rng.expovariate(1 / self.args.job_gap))):
            replicas = self.rng.choices([1, 2, 3], weights=[45, 35, 20])[0]
            seconds = self.rng.uniform(1.0, 5.0)
            fail_first = self.rng.random() < 0.1
            self.submit(replicas, seconds, fail_first=fail_first)

    def submit(self, replicas, seconds, fail_first=False, flood=0):
        with self.lock:
            self.count += 1
            key = f"chaos-{self.args.seed}-{self.count}"
        body = json.dumps(self.spec(key, replicas, seconds, fail_first, flood))
        headers = {"Content-Type": "application/json", "Idempotency-Key": key}
        give_up = time.time() + 120
        while time.time() < give_up:
            try:
                status, hdrs, data = self.cluster.api.request("POST", "/api/v1/jobs", body,
                                                              headers, timeout=10)
            except OSError:
                status, hdrs, data = None, {}, b""
            if status in (200, 201):
                job = json.loads(data)
                with self.lock:
                    self.acknowledged[key] = job["id"]
                    self.replayed += hdrs.get("idempotent-replayed") == "true"
                return
            if status is not None and 400 <= status < 500:
                with self.lock:
                    self.refused.append(f"submission {key} refused: HTTP {status}: {data[:300]!r}")
                return
            with self.lock:
                self.retries += 1
            time.sleep(0.3)
        with self.lock:
            self.refused.append(f"submission {key} was never acknowledged in 120 s")

    def flood(self):
        t = threading.Thread(target=self.submit, args=(1, 2.0),
                             kwargs={"flood": self.args.flood_mb * 1_000_000}, daemon=True)
        t.start()
        self.threads.append(t)

    def finish(self):
        self.stop.set()
        self.thread.join()
        for t in self.threads:
            t.join()


class Chaos:
    """Injects the faults, in the main thread (which alone starts processes)."""

    def __init__(self, args, cluster, submitter):
        self.args = args
        self.cluster = cluster
        self.submitter = submitter
        self.rng = random.Random(args.seed)
        self.faults = []  # chaos_check.Fault
        self.counts = Counter()
        self.events = []  # heap of (time, sequence, action, node)
        self.sequence = 0
        self.bag = []
        self.busy = set()  # nodes with something pending
        self.master_down = False  # killed or paused
        self.clock_stepped = False
        self.guessers = []  # threads sending wrong tokens
        self.guesses = Counter()  # HTTP status (or error) of each wrong token's answer

    def guess(self, until):
        """Wrong tokens from 127.0.0.1, where every agent and this script's valid calls come
        from, 5 a second until `until`: the limiter must slow them, never the valid ones."""
        api = Api(self.cluster.port, None)
        n = 0
        while time.time() < until:
            n += 1
            try:
                status, _, _ = api.request("GET", "/api/v1/jobs",
                                           headers={"Authorization": f"Bearer coh_guess{n:020d}"},
                                           timeout=2.0)
            except OSError as e:
                status = type(e).__name__
            self.guesses[status] += 1
            time.sleep(0.2)

    def later(self, delay, action, node=""):
        self.sequence += 1
        heapq.heappush(self.events, (time.time() + delay, self.sequence, action, node))

    def run_due(self, everything=False):
        while self.events and (everything or self.events[0][0] <= time.time()):
            _, _, action, node = heapq.heappop(self.events)
            if action == "restart_master":
                up = self.cluster.start_master()
                self.cluster.master_ups.append(up)
                self.master_fault.until = up
                self.master_down = False
                log("master back")
            elif action == "start_agent":
                self.cluster.start_agent(node)
                self.busy.discard(node)
                log(f"{node} back")
            elif action == "resume_master":
                up = self.cluster.resume_master()
                # Like a restart, a master that did not run gives every node a whole node
                # timeout from when it runs again.
                self.cluster.master_ups.append(up)
                self.master_fault.until = up
                self.master_down = False
                log("master resumed")
            elif action == "unstep_clock":
                t = self.cluster.step_clock(0)
                self.clock_fault.until = t
                self.clock_stepped = False
                log("master's clock back")
            elif action == "resume":
                t = self.cluster.resume(node)
                for f in reversed(self.faults):
                    if f.kind == "pause" and f.node == node:
                        f.until = t
                        break
                self.busy.discard(node)
                log(f"{node} resumed")

    def out_of_service(self):
        return sum(1 for a in self.cluster.agents.values() if a is None) + len(self.cluster.paused)

    def candidates(self):
        return [n for n, a in self.cluster.agents.items()
                if a is not None and n not in self.busy and n not in self.cluster.paused]

    def possible(self, kind):
        if kind in ("master_kill", "master_pause"):
            return not self.master_down
        if kind == "clock_step":
            return not self.clock_stepped
        if kind in ("flood", "guessing"):
            return True
        if not self.candidates():
            return False
        return kind == "agent_kill" or self.out_of_service() < self.args.max_nodes_out

    def inject(self):
        # A shuffled bag of every kind, so that even a short run sees each kind.
        if not self.bag:
            self.bag = list(FAULT_KINDS)
            self.rng.shuffle(self.bag)
        kind = next((k for k in self.bag if self.possible(k)), None)
        if kind is None:
            return
        self.bag.remove(kind)
        self.counts[kind] += 1
        timeout = self.args.node_timeout
        if kind == "master_kill":
            t = self.cluster.kill_master()
            self.master_fault = check.Fault("master_kill", "", t)
            self.faults.append(self.master_fault)
            self.master_down = True
            down = self.rng.uniform(0.0, 2.0)
            self.later(down, "restart_master")
            log(f"killed the master (-9); back in {down:.1f} s")
            return
        if kind == "master_pause":
            t = self.cluster.pause_master()
            self.master_fault = check.Fault("master_pause", "", t)
            self.faults.append(self.master_fault)
            self.master_down = True
            pause = timeout + self.rng.uniform(1.5, 4.0)
            self.later(pause, "resume_master")
            log(f"paused the master for {pause:.1f} s")
            return
        if kind == "clock_step":
            seconds = self.rng.choice([-1, 1]) * self.rng.randint(60, 3600)
            t = self.cluster.step_clock(seconds)
            self.clock_fault = check.Fault("clock_step", "", t, offset=seconds)
            self.faults.append(self.clock_fault)
            self.clock_stepped = True
            hold = self.rng.uniform(3.0, 8.0)
            self.later(hold, "unstep_clock")
            log(f"stepped the master's wall clock {seconds:+d} s for {hold:.1f} s")
            return
        if kind == "guessing":
            t = time.time()
            until = t + self.rng.uniform(10.0, 20.0)
            thread = threading.Thread(target=self.guess, args=(until,), daemon=True)
            thread.start()
            self.guessers.append(thread)
            self.faults.append(check.Fault("guessing", "", t, until))
            log(f"guessing tokens from 127.0.0.1 for {until - t:.1f} s")
            return
        if kind == "flood":
            self.submitter.flood()
            self.faults.append(check.Fault("flood", "", time.time()))
            log("submitted a log flood")
            return
        node = self.rng.choice(sorted(self.candidates()))
        self.busy.add(node)
        if kind == "machine_loss":
            t0, t1 = self.cluster.kill_machine(node)
            self.faults.append(check.Fault(kind, node, t0, t1))
            back = self.rng.uniform(1.0, 2.5 * timeout)
            self.later(back, "start_agent", node)
            log(f"machine {node} lost; back in {back:.1f} s")
        elif kind == "wipe":
            t0, t1 = self.cluster.kill_machine(node)
            shutil.rmtree(self.cluster.agent_dir(node), ignore_errors=True)
            self.faults.append(check.Fault(kind, node, t0, t1))
            back = self.rng.uniform(0.0, 3.0)
            self.later(back, "start_agent", node)
            log(f"machine {node} lost and wiped; back in {back:.1f} s")
        elif kind == "pause":
            t = self.cluster.pause(node)
            self.faults.append(check.Fault(kind, node, t))
            pause = timeout + self.rng.uniform(1.5, 4.0)
            self.later(pause, "resume", node)
            log(f"paused {node} for {pause:.1f} s")
        elif kind == "agent_kill":
            t = self.cluster.kill_agent(node)
            self.faults.append(check.Fault(kind, node, t))
            back = self.rng.uniform(0.0, 2.0)
            self.later(back, "start_agent", node)
            log(f"killed the agent of {node} (-9); back in {back:.1f} s")

    def run(self, until):
        next_fault = time.time() + self.rng.uniform(*self.args.fault_gap)
        while time.time() < until:
            self.run_due()
            self.cluster.check_daemons()
            if time.time() >= next_fault:
                self.inject()
                next_fault = time.time() + self.rng.uniform(*self.args.fault_gap)
            time.sleep(0.05)
        self.run_due(everything=True)  # every machine back, the master up, its clock true
        for thread in self.guessers:
            thread.join()


def drain(cluster, submitter, timeout):
    """Waits until every acknowledged job has ended; returns the final list of jobs."""
    deadline = time.time() + timeout
    ids = set(submitter.acknowledged.values())
    jobs = []
    while True:
        cluster.check_daemons()
        try:
            jobs = cluster.api.all_jobs(timeout=10)
        except (OSError, ValueError):
            jobs = None
        if jobs is not None:
            open_ids = {j["id"] for j in jobs if j["state"] not in check.TERMINAL} & ids
            if not open_ids:
                return jobs
            if time.time() > deadline:
                log(f"{len(open_ids)} jobs still not ended after {timeout:.0f} s: "
                    f"{sorted(open_ids)[:20]}")
                return jobs
        elif time.time() > deadline:
            raise Infrastructure("the master did not answer GET /api/v1/jobs at the end")
        time.sleep(1.0)


def health_figures(samples, limit_s, report):
    latencies = [s[1] for s in samples if s[2] is None]
    errors = [s for s in samples if s[2] is not None]
    over = [s for s in samples if s[2] is None and s[1] > limit_s]
    for t, took, error in errors[:5]:
        report.fail(f"health check at {check.clock(t)} failed while the master was up: {error}")
    if len(errors) > 5:
        report.fail(f"... and {len(errors) - 5} more failed health checks")
    if over:
        worst = max(over, key=lambda s: s[1])
        report.fail(f"{len(over)} health checks took over {limit_s * 1000:.0f} ms "
                    f"(worst {worst[1] * 1000:.0f} ms at {check.clock(worst[0])})")
    if not latencies:
        report.fail("no health check was answered")
        return "none"
    latencies.sort()
    p99 = latencies[min(len(latencies) - 1, int(len(latencies) * 0.99))]
    worst = max(samples, key=lambda s: s[1] if s[2] is None else 0)
    return (f"{len(latencies)} checks while the master was up, median "
            f"{statistics.median(latencies) * 1000:.1f} ms, p99 {p99 * 1000:.1f} ms, max "
            f"{latencies[-1] * 1000:.1f} ms (at {check.clock(worst[0])}), limit "
            f"{limit_s * 1000:.0f} ms: {len(over)} over, {len(errors)} failed")


def analyse(args, root, cluster, chaos, submitter, health, jobs, end_of_run, leftovers, report):
    with open(f"{root}/starts.log", errors="replace") if os.path.exists(f"{root}/starts.log") \
            else open(os.devnull) as f:
        lines = check.parse_starts(f.read(), report)
    for problem in submitter.refused + cluster.unexpected + leftovers:
        report.fail(problem)
    for f in chaos.faults:
        until = f" until {check.clock(f.until)}" if f.until else ""
        report.details.append(f"fault {f.kind} {f.node} at {check.clock(f.t)}{until}")
    starts = check.check_single_starts(lines, report)
    ids = set(submitter.acknowledged.values())
    for job_id in sorted({line.job for line in lines} - ids):
        report.fail(f"starts.log has tasks of job {job_id}, which no submission created")
    spans = check.intervals(lines, chaos.faults, end_of_run, report)
    check.check_gpu_overlap(spans, report)
    check.check_jobs(submitter.acknowledged, jobs, lines, report)
    check.late_starts(lines, jobs, chaos.faults, report)
    bound = args.node_timeout + args.recovery_slack
    requeued, started = check.check_recovery(lines, chaos.faults, jobs, cluster.master_ups,
                                             bound, report)
    health_line = health_figures(health.samples(), args.health_limit_ms / 1000, report)

    states = report.figures["job_states"]
    attempts = Counter(j["attempt"] for j in jobs if j["id"] in ids)
    print()
    print(f"chaos: seed {args.seed}, {args.duration:.0f} s of faults, {args.agents} agents x "
          f"{args.gpus_per_agent} GPUs, node timeout {args.node_timeout:g} s, in {root}")
    print(f"jobs: {len(submitter.acknowledged)} acknowledged ({submitter.retries} retried "
          f"submissions, {submitter.replayed} answered by a replay), "
          + ", ".join(f"{n} {s}" for s, n in sorted(states.items())))
    print(f"lost: {report.figures['jobs_lost']} acknowledged jobs; twice: "
          f"{report.figures['started_twice']} tasks started twice in one attempt")
    print(f"attempts per job: " + ", ".join(f"{n} jobs x {a}" for a, n in sorted(attempts.items())))
    print(f"tasks: {report.figures['task_starts']} starts recorded, "
          f"{report.figures['late_starts']} of them after the master had ended their attempt "
          "(an agent back from a pause)")
    print("faults: " + ", ".join(f"{FAULT_NAMES[k]}: {chaos.counts[k]}" for k in FAULT_KINDS))
    if chaos.guesses:
        print("wrong tokens answered: " + ", ".join(
            f"{n} x {status}" for status, n in sorted(chaos.guesses.items(), key=str)))
    print(f"after a machine was lost (bound on the requeue: node timeout + "
          f"{args.recovery_slack:g} s = {bound:g} s):")
    for kind in ("machine_loss", "wipe", "pause"):
        print(f"  {FAULT_NAMES[kind]}:")
        print(f"    to the requeue: {check.summary(requeued.get(kind, []))}")
        print(f"    to the next attempt's first start: {check.summary(started.get(kind, []))}")
    every = [t for v in requeued.values() for t in v]
    print(f"  every loss, to the requeue: {check.summary(every)}")
    print("  every loss with no master restart before its bound, to the requeue: "
          f"{check.summary(report.figures.get('requeue_without_master_restart', []))}")
    every = [t for v in started.values() for t in v]
    print(f"  every loss, to the next start: {check.summary(every)}")
    print(f"health: {health_line}")
    with open(f"{root}/details.txt", "w") as f:
        f.write("\n".join(report.details + report.violations) + "\n")
    print(f"violations: {len(report.violations)}")
    for v in report.violations:
        print(f"  VIOLATION: {v}")


def arguments():
    p = argparse.ArgumentParser(
        description=__doc__.split("\n\n")[0] + "\n\n" + __doc__.split("\n\n")[1],
        formatter_class=argparse.RawDescriptionHelpFormatter,
        epilog="Short form (CI, `ctest -R chaos`): --duration 60 --health-limit-ms 500. "
               "Long form by hand: scripts/chaos.sh --duration 600 (niced).")
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    p.add_argument("--bin-dir", default=f"{root}/build/bin",
                   help="where cohortd is (default: %(default)s)")
    p.add_argument("--dir", help="scratch directory (default: a new one under /tmp); removed "
                                 "when every check held, unless --keep")
    p.add_argument("--keep", action="store_true", help="keep the scratch directory")
    p.add_argument("--duration", type=float, default=60,
                   help="seconds of jobs and faults, before the drain (default %(default)s)")
    p.add_argument("--seed", type=int, default=1, help="seed of the jobs and faults")
    p.add_argument("--agents", type=int, default=4, help="agents (default %(default)s)")
    p.add_argument("--gpus-per-agent", type=int, default=2, help="(default %(default)s)")
    p.add_argument("--node-timeout", type=parse_seconds, default=5.0,
                   help="the master's --node-timeout (default 5s)")
    p.add_argument("--recovery-slack", type=parse_seconds, default=5.0,
                   help="a job on a lost machine is requeued within the node timeout and "
                        "this (default 5s)")
    p.add_argument("--health-limit-ms", type=float, default=100,
                   help="the longest a health check may take (default %(default)s)")
    p.add_argument("--job-gap", type=float, default=1.5,
                   help="mean seconds between submissions (default %(default)s)")
    p.add_argument("--fault-gap", type=lambda s: tuple(float(x) for x in s.split(",")),
                   default=(3.0, 8.0), help="MIN,MAX seconds between faults (default 3,8)")
    p.add_argument("--max-nodes-out", type=int, default=2,
                   help="machines down or paused at once, at most (default %(default)s)")
    p.add_argument("--flood-mb", type=int, default=8,
                   help="megabytes a log flood writes (default %(default)s)")
    p.add_argument("--drain-timeout", type=float, default=120,
                   help="seconds for the stream to finish after the faults (default %(default)s)")
    return p.parse_args()


def main():
    args = arguments()
    # A SIGTERM (a test runner's timeout) takes the cluster down like ^C does.
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    if not os.access(f"{args.bin_dir}/cohortd", os.X_OK):
        print(f"chaos: no {args.bin_dir}/cohortd (build first, or give --bin-dir)", file=sys.stderr)
        return 2
    root = os.path.abspath(args.dir) if args.dir else tempfile.mkdtemp(prefix="cohort-chaos-")
    os.makedirs(root, exist_ok=True)
    report = check.Report()
    cluster = Cluster(args, root)
    health = HealthProbe(cluster, f"{root}/health.log")
    submitter = Submitter(args, cluster, root)
    chaos = Chaos(args, cluster, submitter)
    try:
        log(f"cluster in {root}: master on port {cluster.port}, {args.agents} agents")
        cluster.start_master()
        for name in cluster.agents:
            cluster.start_agent(name)
        if cluster.wait_ready(60):
            raise Infrastructure("the agents did not all register within 60 s")
        health.start()
        submitter.thread.start()
        chaos.run(time.time() + args.duration)
        log("faults over; waiting for the submissions and the jobs to finish")
        submitter.finish()
        not_ready = cluster.wait_ready(3 * args.node_timeout + 30)
        if not_ready:
            cluster.unexpected.append(f"nodes still not READY well after the faults ended: "
                                      f"{sorted(not_ready)}")
        jobs = drain(cluster, submitter, args.drain_timeout)
        # Tasks of ended attempts on machines that were paused are stopped once their agent
        # syncs; any still running a while after every job ended outlived its job.
        deadline = time.time() + 15
        while cluster.task_processes() and time.time() < deadline:
            time.sleep(0.5)
        leftovers = [f"a task outlived its job: {cmd}" for cmd in cluster.task_processes().values()]
        health.finish()
        end_of_run = time.time()
        cluster.stop_all()
        analyse(args, root, cluster, chaos, submitter, health, jobs, end_of_run, leftovers, report)
    except Infrastructure as e:
        print(f"chaos: {e}", file=sys.stderr)
        cluster.stop_all()
        print(f"chaos: the scratch directory is kept: {root}", file=sys.stderr)
        return 2
    except BaseException:
        cluster.stop_all()
        print(f"chaos: the scratch directory is kept: {root}", file=sys.stderr)
        raise
    if report.violations or args.keep:
        print(f"the scratch directory is kept: {root}")
    else:
        shutil.rmtree(root, ignore_errors=True)
    return 1 if report.violations else 0


if __name__ == "__main__":
    sys.exit(main())
