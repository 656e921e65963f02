#!/usr/bin/python3
"""Sweep benchmark: grid, random and asha on examples/sweep-digits with the same GPU-time budget.

Starts a local cluster (`cohort up`, one agent with --gpus fake GPUs) in a scratch directory,
runs the example's space as one sweep per searcher and repeat, one sweep at a time, takes it
down again (also on failure or Ctrl-C), and writes into --out:
    runs.json     every run as recorded: each trial's GPU intervals and val_acc points
    summary.json  each run's figures and the medians per searcher
    sweeps.md     the table of medians (docs/sweeps.md, "Measured")
    sweeps.svg    best val_acc so far against GPU time, one line per searcher
Progress goes to stderr.

Usage (from the repository, after building cohortd, cohort and cohort-run-task):
    /usr/bin/python3 bench/sweep_bench.py --out /tmp/sweep-bench            # ~10 min, 2 cores
    /usr/bin/python3 bench/sweep_bench.py --out /tmp/sb --repeats 1 --budget 30 --epoch-seconds 0
bench/sweep_bench_report.py RUNS_JSON OUT_DIR draws the table and chart again from runs.json.
CTest runs bench/sweep_bench_test.py: sweep_bench_selftest (the figures from made-up runs) and
sweep_bench_smoke (this script at --repeats 1 --budget 10 --epoch-seconds 0, under a minute).

The same budget: every searcher gets about --budget GPU seconds, by its max_trials. A trial's
cost is modelled as --start-cost seconds (placing it, starting Python, importing PyTorch and
scikit-learn, loading the data) plus its epochs times (--epoch-cost + --epoch-seconds). A random
trial runs all 27 epochs; an asha trial runs about 4 on average (divisor 3, rungs at epochs 1,
3, 9 and 27: everyone reaches epoch 1, a third epoch 3, a ninth epoch 9, a 27th epoch 27, which
is 3 epochs a trial, plus about one more for the epoch a stopped trial finishes). So random's
max_trials is budget / full cost and asha's budget / asha cost. A grid cannot be cut short (its
max_trials is its size), so its grid is coarsened to fit: its range counts are the largest of
a fixed series (lr 1, 3, 5 points; then hidden 2, batch_size 2, dropout 2) whose size is at most
random's max_trials; a range of count 1 is its minval. What each actually spent is in the
table, and the "within budget" column compares them at exactly --budget GPU seconds.

Repeat r (1..R) uses seed r for random and asha, and sets train.py's own seed (initial weights,
shuffling) to r in every searcher, grid included, so that every repeat is a different draw.
Searchers take turns within a repeat (grid, random, asha, grid, ...) so that a change of the
machine's load falls on all of them alike.
"""

import argparse
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, HERE)
import sweep_bench_report as report  # noqa: E402

SEARCHERS = ("grid", "random", "asha")
EPOCHS = 27
METRIC = "val_acc"
GPUS_PER_TRIAL = 1
# ASHA as examples/sweep-digits/sweep.yaml has it: rungs at epochs 1, 3, 9 and 27.
ASHA = {"time_metric": "epoch", "max_time": EPOCHS, "divisor": 3, "max_rungs": 4}
# The space of examples/sweep-digits (sweep.yaml, random.yaml, grid.yaml): keep them alike.
SPACE = {
    "lr": {"type": "log", "minval": -4, "maxval": 0, "base": 10, "count": 5},
    "optimizer": {"type": "categorical", "vals": ["sgd", "momentum", "adam"]},
    "hidden": {"type": "int", "minval": 16, "maxval": 256, "count": 2},
    "batch_size": {"type": "int", "minval": 16, "maxval": 256, "count": 2},
    "dropout": {"type": "double", "minval": 0.0, "maxval": 0.5, "count": 2},
    "epochs": EPOCHS,
}
# The grid's coarsenings, smallest first: (counts of lr, hidden, batch_size, dropout), each
# times optimizer's 3 values.
GRID_SERIES = [(1, 1, 1, 1), (3, 1, 1, 1), (5, 1, 1, 1), (5, 2, 1, 1), (5, 2, 2, 1),
               (5, 2, 2, 2)]
FINAL_STATES = ("COMPLETED", "KILLED")


def log(message):
    print(f"sweep_bench: {message}", file=sys.stderr, flush=True)


def trial_costs(args):
    """Modelled GPU seconds of a full (27-epoch) trial and of an average asha trial."""
    epoch = args.epoch_cost + args.epoch_seconds
    rungs = [EPOCHS / ASHA["divisor"] ** (ASHA["max_rungs"] - 1 - i)
             for i in range(ASHA["max_rungs"])]
    # Epochs a trial runs on average if each rung keeps 1/divisor: the span up to rung i is run
    # by the share that passed rung i-1.
    asha_epochs, reached, before = 0.0, 1.0, 0.0
    for r in rungs:
        asha_epochs += reached * (r - before)
        reached, before = reached / ASHA["divisor"], r
    asha_epochs += 1  # a stopped trial finishes the epoch it is in
    return args.start_cost + EPOCHS * epoch, args.start_cost + asha_epochs * epoch


def grid_size(counts):
    return 3 * counts[0] * counts[1] * counts[2] * counts[3]


def grid_counts(max_points):
    """The largest coarsening whose grid has at most max_points points (the smallest if none)."""
    fitting = [c for c in GRID_SERIES if grid_size(c) <= max_points]
    return fitting[-1] if fitting else GRID_SERIES[0]


def sweep_spec(searcher, repeat, max_trials, args):
    """The sweep spec (JSON) of one run."""
    space = json.loads(json.dumps(SPACE))
    space["seed"] = repeat  # train.py's seed: initial weights and shuffling
    command = ["/usr/bin/python3", "train.py"]
    if args.epoch_seconds > 0:
        command += ["--epoch-seconds", repr(args.epoch_seconds)]
    spec = {
        "name": f"bench-{searcher}-{repeat}",
        "trial": {
            "framework": "pytorch",
            "tasks": [{"role": "worker",
                       "resources": {"gpus": GPUS_PER_TRIAL, "cpus": 1, "memory": "1Gi"},
                       "command": command,
                       "workdir": os.path.join(ROOT, "examples", "sweep-digits")}],
            "grace_period": "10s",
        },
        "hyperparameters": space,
        "searcher": {"name": searcher, "metric": METRIC, "mode": "max",
                     "max_concurrent_trials": args.gpus},
    }
    if searcher == "grid":
        counts = grid_counts(max_trials)
        for name, count in zip(("lr", "hidden", "batch_size", "dropout"), counts):
            space[name]["count"] = count
        spec["searcher"]["max_trials"] = grid_size(counts)
    else:
        spec["searcher"]["max_trials"] = max_trials
        spec["searcher"]["seed"] = repeat
    if searcher == "asha":
        spec["searcher"].update(ASHA)
    return spec


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Cluster:
    """A local cluster in DIR: `cohort up` on entering, `cohort down` on leaving, however."""

    def __init__(self, bin_dir, work, gpus):
        self.cohort = os.path.join(bin_dir, "cohort")
        self.dir = os.path.join(work, "cluster")
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        # Its own config and data homes: `cohort up` saves its admin token there, not in the
        # caller's ~/.config, and the CLI calls below find it there.
        self.env = dict(os.environ, XDG_CONFIG_HOME=os.path.join(work, "config"),
                        XDG_DATA_HOME=os.path.join(work, "data"), COHORT_MASTER=self.url)
        self.env.pop("COHORT_TOKEN", None)
        self.gpus = gpus
        self.token = None

    def __enter__(self):
        first = free_port() // 1000 * 1000 % 50000 + 10000
        if first <= self.port <= first + 999:
            # `cohort up` refuses task ports that hold the master's: the next thousand.
            first = (first - 10000 + 1000) % 50000 + 10000
        log(f"starting a cluster in {self.dir} on port {self.port}, {self.gpus} fake GPUs")
        try:
            self.cli("up", "--agents", "1", "--gpus-per-agent", str(self.gpus),
                     "--cpus-per-agent", str(max(8, self.gpus)), "--memory-per-agent", "64Gi",
                     "--data-dir", self.dir, "--port", str(self.port),
                     "--task-ports", f"{first}-{first + 999}", "--timeout", "60")
        except BaseException:
            self.down()
            raise
        with open(os.path.join(self.dir, "master", "admin-token"), encoding="utf-8") as f:
            self.token = f.read().strip()
        return self

    def __exit__(self, *exc):
        self.down()
        return False

    def down(self):
        log("taking the cluster down")
        subprocess.run([self.cohort, "down", "--data-dir", self.dir], env=self.env,
                       stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, check=False)

    def cli(self, *args):
        p = subprocess.run([self.cohort, *args], env=self.env, capture_output=True, text=True,
                           check=False)
        if p.returncode != 0:
            raise RuntimeError(f"cohort {' '.join(args)}: exit {p.returncode}: {p.stderr.strip()}")
        return p.stdout

    def get_text(self, path):
        req = urllib.request.Request(self.url + path,
                                     headers={"Authorization": f"Bearer {self.token}"})
        try:
            with urllib.request.urlopen(req, timeout=30) as r:
                return r.read().decode(errors="replace")
        except urllib.error.HTTPError as e:
            raise RuntimeError(f"GET {path}: {e.code} {e.read().decode(errors='replace')}") \
                from None

    def get(self, path):
        return json.loads(self.get_text(path))


def parse_time(text):
    """RFC 3339 as the API writes it ("2026-11-22T00:34:50.138102Z") -> Unix seconds."""
    from datetime import datetime
    return datetime.fromisoformat(text.replace("Z", "+00:00")).timestamp()


def gpu_intervals(job, now):
    """When the job held its GPUs: its ended attempts, and the current one while it runs (as
    the sweep's own gpu_seconds counts them)."""
    out = [[parse_time(a["started_at"]), parse_time(a["finished_at"])]
           for a in job.get("history", []) if a.get("started_at") and a.get("finished_at")]
    if job.get("state") not in ("SUCCEEDED", "FAILED", "KILLED", "PENDING"):
        held = [parse_time(t["held_since"]) for t in job.get("tasks", []) if t.get("held_since")]
        if held:
            out.append([min(held), now])
    return out


def record_trials(cluster, sweep):
    trials = []
    now = time.time()
    for t in sweep["trials"]:
        trial = {"id": t["id"], "job_id": t["job_id"], "state": t["state"],
                 "hparams": t["hparams"], "gpus": GPUS_PER_TRIAL, "intervals": [], "points": [],
                 "sweep_gpu_s": t["gpu_seconds"]}
        if t["job_id"] is not None:
            job = cluster.get(f"/api/v1/jobs/{t['job_id']}")
            trial["intervals"] = gpu_intervals(job, now)
            m = cluster.get(f"/api/v1/jobs/{t['job_id']}/metrics?tag={METRIC}"
                            f"&task=worker/0&max_points=10000")
            for line in m.get("lines", []):
                trial["points"] += [[row[1], row[0], row[2]] for row in line["rows"]]
            trial["points"].sort()
        trials.append(trial)
    trials.sort(key=lambda t: t["id"])
    return trials


def check_failures(cluster, searcher, repeat, trials):
    """Failed trials are named; a sweep whose every trial failed ends the benchmark, with the
    end of one's output (a missing python3-torch or python3-sklearn, say)."""
    failed = [t for t in trials if t["state"] == "FAILED" or not t["points"]]
    if not failed:
        return
    job = failed[0]["job_id"]
    if len(failed) < len(trials):
        log(f"{searcher}, repeat {repeat}: {len(failed)} trial(s) failed or never reported "
            f"{METRIC}, e.g. job {job} (--keep DIR keeps the cluster's logs)")
        return
    logs = cluster.get_text(f"/api/v1/jobs/{job}/logs") if job is not None else ""
    tail = "\n".join(logs.splitlines()[-15:])
    raise RuntimeError(f"{searcher}, repeat {repeat}: every trial failed or never reported "
                       f"{METRIC}; job {job}'s output ends with:\n{tail}")


def run_sweep(cluster, work, searcher, repeat, max_trials, args):
    spec = sweep_spec(searcher, repeat, max_trials, args)
    path = os.path.join(work, "specs", f"{searcher}-{repeat}.json")
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w", encoding="utf-8") as f:
        json.dump(spec, f, indent=2)
    load_before = os.getloadavg()[0]
    started = time.time()
    sweep_id = int(cluster.cli("sweep", "submit", path).strip())
    made = spec["searcher"]["max_trials"]
    log(f"{searcher}, repeat {repeat}: sweep {sweep_id}, {made} trials, seed {repeat}")
    timed_out, last_report, killed = False, 0.0, False
    # The bench polls: the API has no way to wait for a sweep's end, and a second is small
    # beside a sweep's minute.
    while True:
        sweep = cluster.get(f"/api/v1/sweeps/{sweep_id}")
        if sweep["state"] in FINAL_STATES:
            break
        now = time.time()
        if now - started > args.sweep_timeout and not killed:
            log(f"{searcher}, repeat {repeat}: past --sweep-timeout {args.sweep_timeout}s, "
                "killing it")
            cluster.cli("sweep", "kill", str(sweep_id))
            timed_out = killed = True
        if now - last_report >= 10:
            states = [t["state"] for t in sweep["trials"]]
            best = next((t["metric"] for t in sweep["trials"] if t["metric"] is not None), None)
            log(f"  {now - started:5.0f}s: {sweep['trials_made']}/{made} trials made, "
                f"{states.count('RUNNING')} running, {states.count('STOPPED_EARLY')} stopped "
                f"early, {sweep['gpu_seconds']:.0f} GPU-s, best {METRIC} "
                f"{'-' if best is None else f'{best:.4f}'}")
            last_report = now
        time.sleep(1)
    wall = time.time() - started
    trials = record_trials(cluster, sweep)
    check_failures(cluster, searcher, repeat, trials)
    run = {"searcher": searcher, "repeat": repeat, "seed": repeat, "sweep_id": sweep_id,
           "max_trials": made, "state": sweep["state"], "timed_out": timed_out, "wall_s": wall,
           "sweep_gpu_s": sweep["gpu_seconds"], "trials": trials,
           # The 1-minute load average before and after: other work on the machine slows
           # trials' starts most.
           "load": [round(load_before, 2), round(os.getloadavg()[0], 2)]}
    s = report.summarise(run, args.target, args.budget)
    to = s["gpu_s_to_target"]
    log(f"{searcher}, repeat {repeat}: {sweep['state']} in {wall:.0f}s, "
        f"{s['gpu_s']:.0f} GPU-s, best {report.fmt(s['best'], 4)}, "
        f"{s['stopped_early']} stopped early, first points {report.fmt(s['first_point_s'], 1)}s "
        f"after start, load {run['load'][0]}-{run['load'][1]}, to {args.target}: "
        f"{'not reached' if to is None else f'{to:.0f} GPU-s'}")
    return run


def parse_args(argv):
    doc = __doc__.split("\n\n")
    p = argparse.ArgumentParser(description=doc[0], epilog="\n\n".join(doc[1:]),
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--out", required=True, help="where the JSON, Markdown and SVG go")
    p.add_argument("--repeats", type=int, default=3, help="runs per searcher (default 3)")
    p.add_argument("--budget", type=float, default=180,
                   help="GPU seconds each sweep is sized for (default 180)")
    p.add_argument("--target", type=float, default=0.98,
                   help=f"the {METRIC} whose GPU time to reach is measured (default 0.98)")
    p.add_argument("--epoch-seconds", type=float, default=0.3,
                   help="train.py --epoch-seconds: each epoch sleeps this much more, as a "
                        "slower model's would (default 0.3)")
    p.add_argument("--gpus", type=int, default=4,
                   help="fake GPUs, and trials at once (default 4)")
    p.add_argument("--searchers", default=",".join(SEARCHERS),
                   help="a comma-separated list of grid, random, asha (default all)")
    p.add_argument("--start-cost", type=float, default=5.0,
                   help="modelled GPU seconds of a trial's start, for max_trials (default 5)")
    p.add_argument("--epoch-cost", type=float, default=0.15,
                   help="modelled GPU seconds of an epoch's computation, besides "
                        "--epoch-seconds (default 0.15)")
    p.add_argument("--sweep-timeout", type=float, default=600,
                   help="kill a sweep still running after this many seconds (default 600)")
    p.add_argument("--bin-dir", default=os.path.join(ROOT, "build", "bin"),
                   help="where cohort and cohortd are (default build/bin)")
    p.add_argument("--keep", help="keep the cluster's directory (logs, state) here; default: a "
                                  "temporary directory, removed")
    args = p.parse_args(argv)
    searchers = [s for s in args.searchers.split(",") if s]
    bad = [s for s in searchers if s not in SEARCHERS]
    if bad or not searchers:
        p.error(f"--searchers: {','.join(bad) or 'empty'}: use grid, random and asha")
    args.searcher_list = searchers
    for name in ("budget", "target", "start_cost", "epoch_cost", "sweep_timeout"):
        if not getattr(args, name) > 0:
            p.error(f"--{name.replace('_', '-')}: must be above 0, got {getattr(args, name)}")
    if args.target > 1:
        p.error(f"--target: {METRIC} is at most 1, got {args.target}")
    if args.epoch_seconds < 0:
        p.error(f"--epoch-seconds: must be at least 0, got {args.epoch_seconds}")
    if not 1 <= args.repeats <= 100:
        p.error(f"--repeats: must be from 1 to 100, got {args.repeats}")
    if not 1 <= args.gpus <= 64:
        p.error(f"--gpus: must be from 1 to 64, got {args.gpus}")
    for name in ("cohort", "cohortd", "cohort-run-task"):
        if not os.access(os.path.join(args.bin_dir, name), os.X_OK):
            p.error(f"--bin-dir: no {name} in {args.bin_dir}: build it first "
                    "(ninja -C build cohortd cohort cohort-run-task)")
    return args


def on_sigterm(signum, frame):
    raise SystemExit(128 + signum)  # unwinds through the cluster's __exit__: it goes down


def main(argv):
    args = parse_args(argv)
    signal.signal(signal.SIGTERM, on_sigterm)
    full, asha = trial_costs(args)
    max_trials = {"grid": max(1, round(args.budget / full)),
                  "random": max(1, round(args.budget / full)),
                  "asha": max(1, round(args.budget / asha))}
    log(f"budget {args.budget:g} GPU-s: a full trial modelled at {full:.1f} GPU-s, an asha "
        f"trial at {asha:.1f}; max_trials random {max_trials['random']}, asha "
        f"{max_trials['asha']}, grid {grid_size(grid_counts(max_trials['grid']))} points")
    meta = {"target": args.target, "budget_gpu_s": args.budget, "metric": METRIC,
            "repeats": args.repeats, "gpus": args.gpus, "epoch_seconds": args.epoch_seconds,
            "start_cost": args.start_cost, "epoch_cost": args.epoch_cost,
            "modelled_full_trial_gpu_s": full, "modelled_asha_trial_gpu_s": asha,
            "command": "/usr/bin/python3 bench/sweep_bench.py " + " ".join(argv),
            "title": f"examples/sweep-digits, {args.gpus} fake GPUs, --epoch-seconds "
                     f"{args.epoch_seconds:g}, budget {args.budget:g} GPU-s",
            "description": f"examples/sweep-digits on {args.gpus} fake GPUs (CPU training), "
                           f"--epoch-seconds {args.epoch_seconds:g}, a budget of "
                           f"{args.budget:g} GPU seconds per sweep, {args.repeats} "
                           f"repeat{'s' if args.repeats != 1 else ''} per searcher "
                           f"(seeds 1..{args.repeats})."}
    os.makedirs(args.out, exist_ok=True)
    work = args.keep or tempfile.mkdtemp(prefix="sweep-bench-")
    os.makedirs(work, exist_ok=True)
    runs = []
    began = time.time()
    try:
        with Cluster(args.bin_dir, work, args.gpus) as cluster:
            for repeat in range(1, args.repeats + 1):
                for searcher in args.searcher_list:
                    runs.append(run_sweep(cluster, work, searcher, repeat, max_trials[searcher],
                                          args))
                    with open(os.path.join(args.out, "runs.json"), "w", encoding="utf-8") as f:
                        json.dump({"meta": meta, "runs": runs}, f, indent=1)
    finally:
        if not args.keep:
            shutil.rmtree(work, ignore_errors=True)
    meta["total_wall_s"] = time.time() - began
    with open(os.path.join(args.out, "runs.json"), "w", encoding="utf-8") as f:
        json.dump({"meta": meta, "runs": runs}, f, indent=1)
    text = report.write_report(runs, meta, args.out)
    print(text, end="")
    log(f"done in {meta['total_wall_s']:.0f}s; {args.out}: runs.json, summary.json, sweeps.md, "
        "sweeps.svg")
    return 0


if __name__ == "__main__":
    try:
        sys.exit(main(sys.argv[1:]))
    except RuntimeError as e:  # the cluster is down by now
        log(f"error: {e}")
        sys.exit(1)
