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
import statistics
import sys
import tempfile

from bench_cluster import Cluster, parse_time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
MODES = ("staged", "unstaged")


def log(message):
    print(f"dataset_staging_bench: {message}", file=sys.stderr, flush=True)


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
    with Cluster(bin_dir, work, [] if staged else ["--no-dataset-staging"]) as cluster:
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
