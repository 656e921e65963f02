#!/usr/bin/python3
"""What a sweep does to everyone else's waits (docs/simulator.md, "Finding: a 200-trial sweep on
a shared cluster"). For each seed, a synthetic ITP-shaped trace (`cohort sim gen`) is replayed
under the default policy three ways: without the sweep, with it (its trials marked, so that
beyond their team's guarantee they are reclaimed first), and with it under --plain-trials; the
sweep is submitted at each of the given hours in turn. The jobs submitted while the sweep ran
(from its submission to its last trial's end, in the marked run) are pooled over every seed and
hour, and their waits compared.

Usage: sweep_waits.py COHORT OUTDIR [--load 0.95] [--seeds 1,2,3,4,5,6]
                      [--at 100,200,300,400,500,600,700,800] [--team team-1] [--length 8h]
COHORT is the `cohort` binary; OUTDIR receives the traces and each run's --out directory.
Hours past 90% of a trace's submissions are skipped (the sweep would run after the trace).
"""

import argparse
import csv
import math
import os
import subprocess
import sys

HOUR = 3600.0
NODES, GPUS_PER_NODE = 8, 8
TEAMS = "team-0:16,team-1:16,team-2:16,team-3:16"
RUNS = ("without", "marked", "plain")
LABELS = {"without": "without the sweep", "marked": "trials first", "plain": "`--plain-trials`"}


def quantile(values, q):
    """Nearest rank, as the report's Quantile (src/sim/report.cc); 0 for none."""
    if not values:
        return 0.0
    values = sorted(values)
    rank = math.ceil(q * len(values))
    return values[max(0, min(len(values), rank) - 1)]


def read_jobs(path):
    with open(path, encoding="utf-8") as f:
        return list(csv.DictReader(f))


def sweep_window(rows):
    """From the sweep's first trial's submission to its last trial's end."""
    trials = [r for r in rows if r.get("sweep")]
    return (min(float(r["submit"]) for r in trials), max(float(r["end"]) for r in trials))


def scenario(rows, window):
    """One run's figures: the waits and preemptions of the jobs submitted in `window`, the
    preemptions and GPU-hours lost of every job but the trials, and the trials'."""
    first, last = window
    f = {"waits": [], "window_preemptions": 0, "preemptions": 0, "lost_h": 0.0,
         "trial_preemptions": 0, "trial_lost_h": 0.0}
    for r in rows:
        if r.get("sweep"):
            f["trial_preemptions"] += int(r["preemptions"])
            f["trial_lost_h"] += float(r["lost_gpu_seconds"]) / HOUR
            continue
        f["preemptions"] += int(r["preemptions"])
        f["lost_h"] += float(r["lost_gpu_seconds"]) / HOUR
        if float(r["start"]) >= 0 and first <= float(r["submit"]) <= last:
            f["waits"].append(float(r["queued"]))
            f["window_preemptions"] += int(r["preemptions"])
    return f


def pool(scenarios):
    """Sums over scenarios (lists of waits joined)."""
    total = {}
    for s in scenarios:
        for key, value in s.items():
            total[key] = total.get(key, [] if isinstance(value, list) else 0) + value
    return total


def table(pooled, makespans, compared, count):
    """The markdown table of the finding, one row per run."""
    lines = [f"{count} scenarios; the p95 wait of the jobs submitted while the sweep ran, "
             f"trials first against --plain-trials: lower in {compared[0]}, higher in "
             f"{compared[1]}, within a second in {compared[2]}", "",
             "| run | jobs submitted while it ran | median wait | p95 wait | mean wait | "
             "their preemptions | all jobs' preemptions | all jobs' GPU-h lost | "
             "trials preempted | trials' GPU-h lost | sweep makespan |",
             "|---|---|---|---|---|---|---|---|---|---|---|"]
    for run in RUNS:
        p = pooled[run]
        waits = p["waits"]
        mean = sum(waits) / len(waits) if waits else 0.0
        sweep = run != "without"
        lines.append(
            f"| {LABELS[run]} | {len(waits)} | {quantile(waits, 0.5) / 60:.1f} min | "
            f"{quantile(waits, 0.95) / HOUR:.2f} h | {mean / HOUR:.2f} h | "
            f"{p['window_preemptions']} | {p['preemptions']} | {p['lost_h']:.0f} | "
            + (f"{p['trial_preemptions']} | {p['trial_lost_h']:.1f} | "
               f"{sum(makespans[run]) / len(makespans[run]) / HOUR:.1f} h |" if sweep
               else "- | - | - |"))
    return "\n".join(lines)


def compare(marked, plain):
    """0 if trials first gave the lower p95 wait, 1 the higher, 2 within a second."""
    diff = quantile(plain["waits"], 0.95) - quantile(marked["waits"], 0.95)
    return 0 if diff > 1 else 1 if diff < -1 else 2


def run(cmd):
    subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)


def main(argv):
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("cohort")
    parser.add_argument("out")
    parser.add_argument("--load", default="0.95")
    parser.add_argument("--seeds", default="1,2,3,4,5,6")
    parser.add_argument("--at", default="100,200,300,400,500,600,700,800")
    parser.add_argument("--team", default="team-1")
    parser.add_argument("--length", default="8h")
    a = parser.parse_args(argv)
    sim = ["--nodes", str(NODES), "--gpus-per-node", str(GPUS_PER_NODE), "--teams", TEAMS,
           "--policy", "default"]
    scenarios = {run_name: [] for run_name in RUNS}
    makespans = {run_name: [] for run_name in RUNS}
    compared = [0, 0, 0]
    for seed in a.seeds.split(","):
        d = os.path.join(a.out, f"seed{seed}")
        os.makedirs(d, exist_ok=True)
        gen = [a.cohort, "sim", "gen", "--jobs", "4000", "--seed", seed, "--teams", "4",
               "--load", a.load, "--cluster-gpus", str(NODES * GPUS_PER_NODE)]
        run(gen + ["--out", f"{d}/without.csv"])
        run([a.cohort, "sim", "run", "--trace", f"{d}/without.csv", *sim, "--out", f"{d}/without"])
        without = read_jobs(f"{d}/without/jobs-default.csv")
        span = max(float(r["submit"]) for r in without)
        for at in a.at.split(","):
            if float(at) * HOUR > 0.9 * span:
                continue
            spec = (f"trials=200;concurrency=16;divisor=3;rungs=4;gpus=1;length={a.length};"
                    f"at={at}h;team={a.team}")
            trace = f"{d}/sweep-at-{at}h.csv"
            run(gen + ["--sweep", spec, "--out", trace])
            rows = {"without": without}
            for name, extra in (("marked", []), ("plain", ["--plain-trials"])):
                out = f"{d}/{name}-at-{at}h"
                run([a.cohort, "sim", "run", "--trace", trace, *sim, *extra, "--out", out])
                rows[name] = read_jobs(f"{out}/jobs-default.csv")
                first, last = sweep_window(rows[name])
                makespans[name].append(last - first)
            window = sweep_window(rows["marked"])
            figures = {name: scenario(rows[name], window) for name in RUNS}
            for name in RUNS:
                scenarios[name].append(figures[name])
            compared[compare(figures["marked"], figures["plain"])] += 1
    count = len(scenarios["marked"])
    if count == 0:
        sys.exit("no scenario: every --at is past 90% of the traces' submissions")
    pooled = {name: pool(scenarios[name]) for name in RUNS}
    print(f"load {a.load}, sweep of team {a.team}, trials of {a.length} at full length")
    print(table(pooled, makespans, compared, count))


if __name__ == "__main__":
    main(sys.argv[1:])
