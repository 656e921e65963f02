#!/usr/bin/python3
"""Pulling (docs/runtimes.md): how long a job's GPU is held before its command starts when its
container image is not on the node (cold: the task's supervisor pulls it with the GPU held) and
when it is (warm: already in podman's store).

Starts Debian's docker-registry on a loopback port, builds an image without network (buildah
from scratch, busybox-static and --mib MiB of random bytes in one layer) and pushes it there,
leaving no copy in podman's store. Each run starts a fresh cluster (cohortd master, which pulls
from that registry, and one agent with one fake GPU and --runtime podman) in a scratch
directory; a cold run first removes the image from the node, a warm run first pulls it. It
submits one job that runs in the image and prints when its command starts, and takes the
cluster down. From the job's record and that line it takes:
    gpu_held_s   command start - when the master took the job's GPU (the task's held_since)
    start_s      command start - submission
The modes take turns (cold, warm, cold, ...). Prints a table of medians and their ratio and,
with --json, writes every run and the medians. Runs as root (the agent's podman is rootful).

Usage (from the repository, as root, after building cohortd, cohort and cohort-run-task):
    /usr/bin/python3 bench/image_pull_bench.py                       # 256 MiB, 5 runs each
    /usr/bin/python3 bench/image_pull_bench.py --mib 8 --runs 1      # a smoke run
"""

import argparse
import json
import os
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request

from bench_cluster import Cluster, free_port, parse_time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
MODES = ("cold", "warm")
PODMAN = "/usr/bin/podman"
BUILDAH = "/usr/bin/buildah"
REGISTRY = "/usr/bin/docker-registry"
BUSYBOX = "/bin/busybox"


def log(message):
    print(f"image_pull_bench: {message}", file=sys.stderr, flush=True)


def run(*args, check=True):
    """Runs a tool; its stripped output, or RuntimeError with what it said."""
    p = subprocess.run(list(args), capture_output=True, text=True, check=False)
    if check and p.returncode != 0:
        raise RuntimeError(f"{' '.join(args)}: exit {p.returncode}: "
                           f"{(p.stderr or p.stdout).strip()}")
    return p.stdout.strip()


def image_exists(image):
    return subprocess.run([PODMAN, "image", "exists", image], capture_output=True,
                          check=False).returncode == 0


class Registry:
    """Debian's docker-registry on a free loopback port, its storage in DIR. Debian's own
    /etc/docker/registry/config.yml asks for an htpasswd file the package does not make: it gets
    a configuration of its own."""

    def __init__(self, work):
        self.dir = work
        self.host = f"127.0.0.1:{free_port()}"
        self.proc = None

    def __enter__(self):
        os.makedirs(self.dir, exist_ok=True)
        config = os.path.join(self.dir, "config.yml")
        with open(config, "w") as f:
            f.write(f"version: 0.1\nlog:\n  level: warn\nstorage:\n  filesystem:\n"
                    f"    rootdirectory: {os.path.join(self.dir, 'data')}\n"
                    f"http:\n  addr: {self.host}\n")
        with open(os.path.join(self.dir, "registry.log"), "w") as out:
            self.proc = subprocess.Popen([REGISTRY, "serve", config], stdout=out,
                                         stderr=subprocess.STDOUT, start_new_session=True)
        try:
            deadline = time.monotonic() + 30
            while True:
                try:
                    with urllib.request.urlopen(f"http://{self.host}/v2/", timeout=5) as r:
                        if r.status == 200:
                            break
                except OSError:
                    pass
                if self.proc.poll() is not None or time.monotonic() > deadline:
                    raise RuntimeError(f"the registry did not start; see {self.dir}/registry.log")
                time.sleep(0.05)
        except BaseException:
            self.stop()
            raise
        return self

    def __exit__(self, *exc):
        self.stop()
        return False

    def stop(self):
        if self.proc is None or self.proc.poll() is not None:
            return
        self.proc.send_signal(signal.SIGTERM)
        try:
            self.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()


def push_image(mib, image):
    """Builds an image of busybox-static, every applet linked in /bin, and MIB MiB of random
    bytes in /payload, pushes it as IMAGE and leaves no copy of it in podman's store."""
    local = f"localhost/cohort-pull-bench:{os.getpid()}"
    ctr = run(BUILDAH, "from", "scratch")
    try:
        mnt = run(BUILDAH, "mount", ctr)
        os.makedirs(os.path.join(mnt, "bin"), exist_ok=True)
        shutil.copy2(BUSYBOX, os.path.join(mnt, "bin", "busybox"))
        for applet in run(BUSYBOX, "--list").splitlines():
            if applet and applet != "busybox":
                os.symlink("busybox", os.path.join(mnt, "bin", applet))
        with open(os.path.join(mnt, "payload"), "wb") as f:
            for _ in range(mib):
                f.write(os.urandom(1 << 20))
        run(BUILDAH, "unmount", ctr)
        run(BUILDAH, "config", "--cmd", "/bin/sh", "--env", "PATH=/bin", ctr)
        run(BUILDAH, "commit", "--rm", "--quiet", ctr, local)
    except BaseException:
        run(BUILDAH, "rm", ctr, check=False)
        raise
    try:
        run(PODMAN, "push", "--quiet", "--tls-verify=false", local, image)
    finally:
        run(PODMAN, "rmi", local, check=False)
    run(PODMAN, "rmi", "--force", image, check=False)
    if image_exists(image):
        raise RuntimeError(f"{image} is still in podman's store after podman rmi")


# busybox's date has no %N: its ts prints the time to the microsecond.
SPEC = """name: puller
tasks:
  - role: main
    image: {image}
    resources: {{gpus: 1, cpus: 1, memory: 1Gi}}
    command: [sh, -c, "echo command-start $(echo | ts %.s)"]
"""


def one_run(bin_dir, work, registry, image, cold):
    if cold:
        run(PODMAN, "rmi", "--force", image, check=False)
        if image_exists(image):
            raise RuntimeError(f"{image} is still in podman's store after podman rmi")
    else:
        run(PODMAN, "pull", "--quiet", "--tls-verify=false", image)
    with Cluster(bin_dir, work, ["--insecure-image-registry", registry],
                 ["--runtime", "podman"]) as cluster:
        spec = os.path.join(work, "job.yaml")
        with open(spec, "w") as f:
            f.write(SPEC.format(image=image))
        job_id = int(json.loads(cluster.cli("submit", "--no-context", spec, "-o", "json"))["id"])
        cluster.wait(lambda: cluster.get(f"/jobs/{job_id}")["state"] in
                     ("SUCCEEDED", "FAILED", "KILLED"), "the job to end", timeout=600)
        job = cluster.get(f"/jobs/{job_id}")
        if job["state"] != "SUCCEEDED":
            raise RuntimeError(f"job {job_id} {job['state']}: {job.get('message')}")
        logs = cluster.cli("logs", str(job_id))
        started = next(float(line.split()[-1]) for line in logs.splitlines()
                       if "command-start" in line)
        held = parse_time(job["tasks"][0]["held_since"])
        events = [e["message"] for e in cluster.get(f"/jobs/{job_id}/events")["events"]
                  if e["type"] == "image"]
        result = {"cold": cold, "gpu_held_s": started - held,
                  "start_s": started - parse_time(job["submitted_at"]),
                  "pulled": "cohort: pulling image" in logs,
                  "pull_log": next((line.strip() for line in logs.splitlines()
                                    if "cohort: pulled image" in line), None),
                  "image_events": events}
    mode = "cold" if cold else "warm"
    if result["pulled"] != cold:
        raise RuntimeError(f"a {mode} run {'did not pull' if cold else 'pulled'} the image; "
                           f"see {work}")
    return result


def main(argv):
    doc = __doc__.split("\n\n")
    p = argparse.ArgumentParser(description=doc[0], epilog="\n\n".join(doc[1:]),
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--bin-dir", default=os.path.join(ROOT, "build", "bin"))
    p.add_argument("--mib", type=int, default=256, help="the image's payload (default 256)")
    p.add_argument("--runs", type=int, default=5, help="runs of each mode (default 5)")
    p.add_argument("--work", help="scratch directory (default: a new one, removed after)")
    p.add_argument("--json", help="write every run and the medians here")
    args = p.parse_args(argv)
    if os.geteuid() != 0:
        print("image_pull_bench: run it as root: the agent runs its tasks' containers with "
              "rootful podman (docs/runtimes.md)", file=sys.stderr)
        return 2
    for tool in (PODMAN, BUILDAH, REGISTRY, BUSYBOX):
        if not os.path.exists(tool):
            print(f"image_pull_bench: {tool} is missing (apt-get install podman runc catatonit "
                  "buildah docker-registry busybox-static)", file=sys.stderr)
            return 2
    args.bin_dir = os.path.abspath(args.bin_dir)
    work = args.work or tempfile.mkdtemp(prefix="cohort-pull-bench-")
    try:
        with Registry(os.path.join(work, "registry")) as registry:
            image = f"{registry.host}/bench/payload:1"
            try:
                log(f"building an image of {args.mib} MiB and pushing it as {image}")
                push_image(args.mib, image)
                runs = []
                for r in range(args.runs):
                    for mode in MODES:
                        run_dir = os.path.join(work, f"{mode}-{r}")
                        result = one_run(args.bin_dir, run_dir, registry.host, image,
                                         mode == "cold")
                        shutil.rmtree(run_dir, ignore_errors=True)
                        log(f"{mode} run {r + 1}: GPU held {result['gpu_held_s']:.3f} s before "
                            f"the command, started {result['start_s']:.3f} s after submission")
                        runs.append(result)
            finally:
                # The node's copy of what the runs pulled, by this registry's (random) port.
                run(PODMAN, "rmi", "--force", image, check=False)
    finally:
        if not args.work:
            shutil.rmtree(work, ignore_errors=True)
    medians = {}
    for mode in MODES:
        mine = [r for r in runs if r["cold"] == (mode == "cold")]
        medians[mode] = {k: statistics.median(r[k] for r in mine)
                         for k in ("gpu_held_s", "start_s")}
    print(f"{args.mib} MiB, {args.runs} runs each, medians:")
    print("| | GPU held before the command (s) | submission to command (s) |")
    print("|---|---|---|")
    for mode in MODES:
        print(f"| {mode} | {medians[mode]['gpu_held_s']:.3f} | {medians[mode]['start_s']:.3f} |")
    cold, warm = medians["cold"], medians["warm"]
    if warm["gpu_held_s"] > 0:
        print(f"GPU held: cold / warm = {cold['gpu_held_s'] / warm['gpu_held_s']:.1f}")
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"mib": args.mib, "runs": runs, "medians": medians}, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
