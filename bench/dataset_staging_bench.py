#!/usr/bin/python3
"""Placement and the pull (docs/data.md): how long a job's GPUs are held before its command
starts when its node does not hold its dataset, with the master's dataset staging (the job is
held back, GPUs free, while the node fetches it) and without (--no-dataset-staging: the task's
supervisor pulls it with the GPUs held).

Each run starts a fresh cluster (cohortd master and one agent with one fake GPU) in a scratch
directory, so that the node's cache is empty, puts a dataset of --mib MiB of random bytes in
--files files, submits one job that reads it and prints when its command starts, and takes the
cluster down. From the job's record and that line it takes:
    gpu_held_s   command start - when the master took the job's GPU (the task's held_since)
    start_s      command start - submission
The modes take turns (staged, unstaged, staged, ...). Prints a table of medians and their ratio
and, with --json, writes every run and the medians.

Usage (from the repository, after building cohortd, cohort and cohort-run-task):
    /usr/bin/python3 bench/dataset_staging_bench.py                       # 256 MiB, 5 runs each
    /usr/bin/python3 bench/dataset_staging_bench.py --mib 16 --runs 1     # a smoke run
"""

import argparse
import json
import os
import shutil
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request
from datetime import datetime

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
MODES = ("staged", "unstaged")


def log(message):
    print(f"dataset_staging_bench: {message}", file=sys.stderr, flush=True)


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def parse_time(text):
    """RFC 3339 as the API writes it ("2026-11-22T00:34:50.138102Z") -> Unix seconds."""
    return datetime.fromisoformat(text.replace("Z", "+00:00")).timestamp()


class Cluster:
    """A master and one agent in DIR, started on entering and stopped on leaving, however."""

    def __init__(self, bin_dir, work, staged):
        self.bin_dir = bin_dir
        self.dir = work
        self.staged = staged
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
                      "--url-file", url_file]
            if not self.staged:
                master.append("--no-dataset-staging")
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
                        os.path.join(self.dir, "master", "join-token"), "--allow-root-tasks"],
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


def make_dataset(path, mib, files):
    os.makedirs(path, exist_ok=True)
    per_file = mib * (1 << 20) // files
    for i in range(files):
        with open(os.path.join(path, f"part-{i:03}"), "wb") as f:
            f.write(os.urandom(per_file))


SPEC = """name: reader
datasets: [bench]
tasks:
  - role: worker
    resources: {gpus: 1, cpus: 1, memory: 1Gi}
    command: [sh, -c, "echo command-start $(date +%s.%N); ls $COHORT_DATA_DIR/bench | wc -l"]
"""


def one_run(bin_dir, work, dataset, staged):
    with Cluster(bin_dir, work, staged) as cluster:
        cluster.cli("data", "put", dataset, "bench")
        spec = os.path.join(work, "job.yaml")
        with open(spec, "w") as f:
            f.write(SPEC)
        job_id = int(json.loads(cluster.cli("submit", "--no-context", spec, "-o", "json"))["id"])
        cluster.wait(lambda: cluster.get(f"/jobs/{job_id}")["state"] in
                     ("SUCCEEDED", "FAILED", "KILLED"), "the job to end", timeout=300)
        job = cluster.get(f"/jobs/{job_id}")
        if job["state"] != "SUCCEEDED":
            raise RuntimeError(f"job {job_id} {job['state']}: {job.get('message')}")
        logs = cluster.cli("logs", str(job_id))
        started = next(float(line.split()[-1]) for line in logs.splitlines()
                       if "command-start" in line)
        held = parse_time(job["tasks"][0]["held_since"])
        events = [e["type"] + ": " + e["message"] for e in
                  cluster.get(f"/jobs/{job_id}/events")["events"]]
        return {"staged": staged, "gpu_held_s": started - held,
                "start_s": started - parse_time(job["submitted_at"]),
                "held_back": any("fetch its datasets" in e for e in events),
                "from_cache": "from this node's cache" in logs}


def main(argv):
    doc = __doc__.split("\n\n")
    p = argparse.ArgumentParser(description=doc[0], epilog="\n\n".join(doc[1:]),
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--bin-dir", default=os.path.join(ROOT, "build", "bin"))
    p.add_argument("--mib", type=int, default=256, help="the dataset's size (default 256)")
    p.add_argument("--files", type=int, default=16, help="in this many files (default 16)")
    p.add_argument("--runs", type=int, default=5, help="runs of each mode (default 5)")
    p.add_argument("--work", help="scratch directory (default: a new one, removed after)")
    p.add_argument("--json", help="write every run and the medians here")
    args = p.parse_args(argv)
    args.bin_dir = os.path.abspath(args.bin_dir)
    work = args.work or tempfile.mkdtemp(prefix="cohort-staging-bench-")
    try:
        dataset = os.path.join(work, "dataset")
        log(f"making {args.mib} MiB in {args.files} files")
        make_dataset(dataset, args.mib, args.files)
        runs = []
        for r in range(args.runs):
            for mode in MODES:
                run_dir = os.path.join(work, f"{mode}-{r}")
                run = one_run(args.bin_dir, run_dir, dataset, mode == "staged")
                shutil.rmtree(run_dir, ignore_errors=True)
                log(f"{mode} run {r + 1}: GPU held {run['gpu_held_s']:.3f} s before the command, "
                    f"started {run['start_s']:.3f} s after submission")
                runs.append(run)
    finally:
        if not args.work:
            shutil.rmtree(work, ignore_errors=True)
    medians = {}
    for mode in MODES:
        mine = [r for r in runs if r["staged"] == (mode == "staged")]
        medians[mode] = {k: statistics.median(r[k] for r in mine)
                         for k in ("gpu_held_s", "start_s")}
    print(f"{args.mib} MiB, {args.runs} runs each, medians:")
    print("| | GPU held before the command (s) | submission to command (s) |")
    print("|---|---|---|")
    for mode in MODES:
        print(f"| {mode} | {medians[mode]['gpu_held_s']:.3f} | {medians[mode]['start_s']:.3f} |")
    staged, unstaged = medians["staged"], medians["unstaged"]
    if staged["gpu_held_s"] > 0:
        print(f"GPU held: unstaged / staged = {unstaged['gpu_held_s'] / staged['gpu_held_s']:.1f}")
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"mib": args.mib, "files": args.files, "runs": runs, "medians": medians},
                      f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
