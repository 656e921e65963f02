#!/usr/bin/python3
"""Tables of bench/sim_findings.sh: one markdown table per trace of each policy's figures over
its seeds (mean, and min-max when there is more than one seed), and one of each team's average
wait per policy (mean over seeds).

Usage: sim_findings.py MANIFEST
MANIFEST is tab-separated, one line per run (`cohort sim run ... -o json` of one policy):
    trace  title  seed  policy  wall_s  peak_mib  json_path
Runs of one trace share its title; traces and policies are printed in the order they first
appear. With a policy named sjf-oracle, each policy's average JCT is also given as a ratio to
sjf-oracle's on the same trace and seed.
"""

import json
import re
import sys

ORACLE = "sjf-oracle"
HOUR = 3600.0


def read_manifest(path):
    """The runs, in order: dicts of trace, title, seed, policy, wall_s, peak_mib, figures."""
    runs = []
    with open(path, encoding="utf-8") as f:
        for n, line in enumerate(f, 1):
            line = line.rstrip("\n")
            if not line:
                continue
            fields = line.split("\t")
            if len(fields) != 7:
                raise ValueError(f"{path}:{n}: expected 7 tab-separated fields, got {len(fields)}")
            trace, title, seed, policy, wall, peak, json_path = fields
            with open(json_path, encoding="utf-8") as j:
                figures = json.load(j)
            if len(figures) != 1:
                raise ValueError(f"{json_path}: expected the figures of one policy")
            runs.append({"trace": trace, "title": title, "seed": seed, "policy": policy,
                         "wall_s": float(wall), "peak_mib": float(peak) if peak else None,
                         "figures": figures[0]})
    return runs


def ordered(values):
    seen = []
    for v in values:
        if v not in seen:
            seen.append(v)
    return seen


def spread(values, digits=2):
    """'mean (min–max)'; only the mean for one value, or when min and max print alike; '—' for
    none."""
    values = [v for v in values if v is not None]
    if not values:
        return "—"
    mean = sum(values) / len(values)
    low, high = f"{min(values):.{digits}f}", f"{max(values):.{digits}f}"
    text = f"{mean:.{digits}f}"
    return text if low == high else f"{text} ({low}–{high})"


def oracle_ratios(runs, policy):
    """avg JCT of `policy` / that of sjf-oracle, per seed that has both."""
    oracle = {r["seed"]: r["figures"]["avg_jct_s"] for r in runs if r["policy"] == ORACLE}
    return [r["figures"]["avg_jct_s"] / oracle[r["seed"]] for r in runs
            if r["policy"] == policy and oracle.get(r["seed"])]


def natural(name):
    """team-2 before team-10."""
    return [int(p) if p.isdigit() else p for p in re.split(r"(\d+)", name)]


def figures_table(runs):
    policies = ordered(r["policy"] for r in runs)
    with_oracle = ORACLE in policies
    header = ["policy", "avg JCT h", "median h", "p95 JCT h", "p99 JCT h", "p99 wait h",
              "max wait in guarantee min", "preempt/job", "GPU-h lost", "lost %", "unfinished", "wall s", "peak MiB"]
    if with_oracle:
        header.append("avg JCT / sjf-oracle")
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    for policy in policies:
        mine = [r for r in runs if r["policy"] == policy]
        fig = [r["figures"] for r in mine]
        row = [policy,
               spread([f["avg_jct_s"] / HOUR for f in fig]),
               spread([f["median_jct_s"] / HOUR for f in fig]),
               spread([f["p95_jct_s"] / HOUR for f in fig]),
               spread([f["p99_jct_s"] / HOUR for f in fig]),
               spread([f["p99_queueing_s"] / HOUR for f in fig]),
               spread([f["max_guaranteed_wait_s"] / 60 for f in fig], 0),
               spread([f["preemptions_per_job"] for f in fig], 3),
               spread([f["lost_gpu_hours"] for f in fig], 0),
               spread([f["lost_share"] * 100 for f in fig], 2),
               spread([f["unfinished"] for f in fig], 1 if len(fig) > 1 else 0),
               spread([r["wall_s"] for r in mine], 1),
               spread([r["peak_mib"] for r in mine], 0)]
        if with_oracle:
            row.append(spread(oracle_ratios(runs, policy)))
        lines.append("| " + " | ".join(row) + " |")
    return "\n".join(lines)


def teams_table(runs):
    """Per team: jobs and guaranteed GPUs (mean over seeds), and each policy's average wait."""
    policies = ordered(r["policy"] for r in runs)
    first = policies[0]
    teams = sorted({t["team"] for r in runs for t in r["figures"]["teams"]}, key=natural)
    header = ["team", "jobs", "quota GPUs"] + [f"{p} wait h" for p in policies]
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]

    def of(policy, team, key):
        return [t[key] for r in runs if r["policy"] == policy
                for t in r["figures"]["teams"] if t["team"] == team]

    for team in teams:
        row = [team, spread(of(first, team, "jobs"), 0), spread(of(first, team, "guaranteed_gpus"), 0)]
        for policy in policies:
            waits = [w / HOUR for w in of(policy, team, "avg_queueing_s")]
            row.append(f"{sum(waits) / len(waits):.2f}" if waits else "—")
        lines.append("| " + " | ".join(row) + " |")
    return "\n".join(lines)


def report(runs):
    out = []
    for trace in ordered(r["trace"] for r in runs):
        mine = [r for r in runs if r["trace"] == trace]
        seeds = ordered(r["seed"] for r in mine)
        jobs = mine[0]["figures"]["jobs"]
        runs_note = (f"seeds {', '.join(seeds)}: mean (min–max)" if len(seeds) > 1
                     else f"seed {seeds[0]}: one run")
        out.append(f"### {mine[0]['title']}\n\n{jobs:,} jobs; {runs_note}.\n")
        out.append(figures_table(mine) + "\n")
        out.append("Average wait per team (hours, mean over seeds):\n")
        out.append(teams_table(mine) + "\n")
    return "\n".join(out)


def main(argv):
    if len(argv) != 2 or argv[1] in ("-h", "--help"):
        print(__doc__.strip())
        return 0 if len(argv) == 2 else 2
    print(report(read_manifest(argv[1])))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
