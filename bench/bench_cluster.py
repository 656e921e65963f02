"""What the end-to-end benchmarks share: a master and one agent with one fake GPU in a scratch
directory (bench/dataset_staging_bench.py, bench/image_pull_bench.py), free ports, and the API's
times."""

import json
import os
import signal
import socket
import subprocess
import time
import urllib.request
from datetime import datetime


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def parse_time(text):
    """RFC 3339 as the API writes it ("2026-11-22T00:34:50.138102Z") -> Unix seconds."""
    return datetime.fromisoformat(text.replace("Z", "+00:00")).timestamp()


class Cluster:
    """A master and one agent in DIR, started on entering and stopped on leaving, however."""

    def __init__(self, bin_dir, work, master_args=(), agent_args=()):
        self.bin_dir = bin_dir
        self.dir = work
        self.master_args = list(master_args)
        self.agent_args = list(agent_args)
        self.procs = []
        self.url = None
        self.token = None
        self.env = None

    def start(self, args, log_name):
        with open(os.path.join(self.dir, log_name), "w") as out:
            p = subprocess.Popen(args, stdout=out, stderr=subprocess.STDOUT,
                                 start_new_session=True)
        self.procs.append(p)
        return p

    def __enter__(self):
        os.makedirs(self.dir, exist_ok=True)
        url_file = os.path.join(self.dir, "master.url")
        try:
            master = [os.path.join(self.bin_dir, "cohortd"), "master", "--data-dir",
                      os.path.join(self.dir, "master"), "--listen", f"127.0.0.1:{free_port()}",
                      "--url-file", url_file, *self.master_args]
            self.start(master, "master.log")
            self.wait(lambda: os.path.exists(url_file), "the master to start")
            with open(url_file) as f:
                self.url = f.read().split("\n")[0]
            with open(os.path.join(self.dir, "master", "admin-token")) as f:
                self.token = f.read().strip()
            self.env = dict(os.environ, COHORT_MASTER=self.url, COHORT_TOKEN=self.token,
                            XDG_CONFIG_HOME=os.path.join(self.dir, "config"))
            first = free_port() // 100 * 100 % 50000 + 10000
            self.start([os.path.join(self.bin_dir, "cohortd"), "agent", "--master", self.url,
                        "--name", "node-0", "--data-dir", os.path.join(self.dir, "agent"),
                        "--cpus", "2", "--memory", "8Gi", "--gpus", "1",
                        "--ports", f"{first}-{first + 19}", "--join-token-file",
                        os.path.join(self.dir, "master", "join-token"), "--allow-root-tasks",
                        *self.agent_args],
                       "agent.log")
            self.wait(lambda: any(n["state"] == "READY" for n in self.get("/nodes")["nodes"]),
                      "the agent to register")
        except BaseException:
            self.stop()
            raise
        return self

    def __exit__(self, *exc):
        self.stop()
        return False

    def stop(self):
        for p in reversed(self.procs):
            if p.poll() is None:
                p.send_signal(signal.SIGTERM)
        for p in self.procs:
            try:
                p.wait(timeout=20)
            except subprocess.TimeoutExpired:
                p.kill()
                p.wait()
        # The task's supervisor outlives its agent by design: end it too.
        subprocess.run(["pkill", "-f", os.path.join(self.dir, "agent")], check=False)

    def wait(self, ready, what, timeout=60):
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            try:
                if ready():
                    return
            except (OSError, ValueError, KeyError):
                pass
            time.sleep(0.05)
        raise RuntimeError(f"timed out waiting for {what}; see {self.dir}")

    def get(self, path):
        req = urllib.request.Request(self.url + "/api/v1" + path,
                                     headers={"Authorization": f"Bearer {self.token}"})
        with urllib.request.urlopen(req, timeout=30) as r:
            return json.loads(r.read())

    def cli(self, *args, cwd=None):
        p = subprocess.run([os.path.join(self.bin_dir, "cohort"), *args], env=self.env,
                           capture_output=True, text=True, check=False, cwd=cwd or self.dir)
        if p.returncode != 0:
            raise RuntimeError(f"cohort {' '.join(args)}: exit {p.returncode}: {p.stderr.strip()}")
        return p.stdout
