#!/usr/bin/python3
"""Small files against packed shards: how fast Python reads a dataset of many small files as
plain files and as tar shards that `cohort data pack` wrote (docs/data.md, "Small files into
shards", "Measured").

Makes --files files of --file-bytes random bytes each (one sample each, --per-dir to a
directory, as image folders are), packs them with `cohort data pack` (timed), then reads every
sample, --runs times each way:
    plain sequential   list the files (os.walk, sorted), then open and read each in that order:
                       what a naive map-style Dataset does
    plain shuffled     the same, in a random order: that Dataset under DataLoader(shuffle=True)
    shards sequential  python/cohort_shards.py, in key order (samples sliced out of 1 MiB reads
                       at the offsets of each shard's member table)
    shards shuffled    the same with shuffle=True (shard order and a 1,000-sample buffer)
    shards strict      in key order with strict=True: through tarfile, every header parsed (as
                       the reader did before member tables, and does for version 1 indexes)
and reports the median samples/s of each and the ratios (shards against plain files). Listing is timed apart from reading
(a Dataset lists once per job, not per epoch). It also reports the mean bytes per read call of
each way (rchar / syscr of /proc/self/io over the read), the figure by which the master's
advisor tells a loader of small files (docs/observability.md, "Advice").

Cache: the files were just written, so the page cache holds them: the warm runs read memory
through the file system, which is what the figures of a second epoch on a node with memory to
spare are. When /proc/sys/vm/drop_caches is writable (root, outside a read-only /proc), each
cold run first syncs and drops the page cache, dentries and inodes (echo 3: this affects the
whole machine, briefly) and reads from the disk; otherwise cold runs are skipped and the report
says so.

Usage (after building cohort):
    /usr/bin/python3 bench/data_pack_bench.py                          # 100,000 x 4 KiB, ~4 min
    /usr/bin/python3 bench/data_pack_bench.py --files 20000 --runs 3 --cold-runs 0 --json r.json
CTest runs bench/data_pack_bench_test.py (data_pack_bench_smoke, label bench): a small input,
one run each, its report checked.
"""

import argparse
import json
import os
import platform
import random
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, os.path.join(ROOT, "python"))
import cohort_shards  # noqa: E402

WAYS = ("plain_sequential", "plain_shuffled", "shards_sequential", "shards_shuffled",
        "shards_strict")
DROP_CACHES = "/proc/sys/vm/drop_caches"


def make_files(src, files, file_bytes, per_dir, seed):
    rng = random.Random(seed)
    for i in range(files):
        d = os.path.join(src, "train", f"c{i // per_dir:05d}")
        if i % per_dir == 0:
            os.makedirs(d, exist_ok=True)
        with open(os.path.join(d, f"{i:07d}.jpg"), "wb") as f:
            f.write(rng.randbytes(file_bytes))


def pack(bin_dir, src, out, shard_size):
    started = time.monotonic()
    done = subprocess.run([os.path.join(bin_dir, "cohort"), "data", "pack", src, out,
                           "--shard-size", shard_size, "-o", "json"],
                          capture_output=True, text=True)
    seconds = time.monotonic() - started
    if done.returncode != 0:
        raise SystemExit(f"data_pack_bench: cohort data pack failed: {done.stderr.strip()}")
    return seconds, json.loads(done.stdout)


def list_files(src):
    paths = []
    for d, dirs, names in os.walk(src):
        dirs.sort()
        paths += [os.path.join(d, n) for n in sorted(names)]
    return paths


def read_plain(paths):
    n = size = 0
    for p in paths:
        with open(p, "rb") as f:
            size += len(f.read())
        n += 1
    return n, size


def read_shards(out, shuffle, seed, strict=False):
    n = size = 0
    for sample in cohort_shards.Shards(out, shuffle=shuffle, seed=seed, buffer=1000,
                                       strict=strict):
        size += len(sample["jpg"])
        n += 1
    return n, size


def read_io():
    """(rchar, syscr) of this process so far; None without /proc/self/io."""
    try:
        with open("/proc/self/io") as f:
            fields = dict(line.split(":", 1) for line in f if ":" in line)
        return int(fields["rchar"]), int(fields["syscr"])
    except (OSError, KeyError, ValueError):
        return None


def can_drop_caches():
    return os.access(DROP_CACHES, os.W_OK)


def drop_caches():
    os.sync()
    with open(DROP_CACHES, "w") as f:
        f.write("3\n")


def measure(way, src, out, paths, run):
    """(samples, bytes, seconds, bytes per read call or None) of one read of every sample."""
    io_before = read_io()
    started = time.monotonic()
    if way == "plain_sequential":
        n, size = read_plain(paths)
    elif way == "plain_shuffled":
        order = list(paths)
        random.Random(run).shuffle(order)
        started = time.monotonic()  # the shuffle of the list is not reading
        n, size = read_plain(order)
    else:
        n, size = read_shards(out, way == "shards_shuffled", run, way == "shards_strict")
    seconds = time.monotonic() - started
    io_after = read_io()
    per_call = None
    if io_before and io_after and io_after[1] > io_before[1]:
        per_call = (io_after[0] - io_before[0]) / (io_after[1] - io_before[1])
    return n, size, seconds, per_call


def run_all(args, src, out, paths, runs, cold):
    """Every way, `runs` times, in turns (so that a change of the machine's load falls on all
    alike); each run's samples/s."""
    rates = {w: [] for w in WAYS}
    per_call = {w: [] for w in WAYS}
    for run in range(runs):
        for way in WAYS:
            if cold:
                drop_caches()
            n, size, seconds, bytes_per_call = measure(way, src, out, paths, run)
            if n != args.files or size != args.files * args.file_bytes:
                raise SystemExit(f"data_pack_bench: {way} read {n} samples of {size} bytes; "
                                 f"expected {args.files} of {args.files * args.file_bytes}")
            rates[way].append(n / seconds)
            if bytes_per_call is not None:
                per_call[way].append(bytes_per_call)
            print(f"  {'cold' if cold else 'warm'} run {run + 1}: {way:18} {n / seconds:10.0f} "
                  "samples/s", file=sys.stderr)
    return rates, per_call


def summarise(measured):
    rates, per_call = measured
    medians = {w: statistics.median(r) for w, r in rates.items()}
    return {"runs": len(rates[WAYS[0]]), "samples_per_s": rates, "median_samples_per_s": medians,
            # None where /proc/self/io could not be read.
            "median_bytes_per_read_call": {w: statistics.median(c) if c else None
                                           for w, c in per_call.items()},
            "ratio_sequential": medians["shards_sequential"] / medians["plain_sequential"],
            "ratio_shuffled": medians["shards_shuffled"] / medians["plain_shuffled"],
            "ratio_strict": medians["shards_strict"] / medians["plain_sequential"]}


def table(report):
    lines = [f"{report['files']:,} files of {report['file_bytes']:,} bytes, "
             f"{report['shards']} shards of {report['shard_size']}; "
             f"packed in {report['pack_s']:.1f} s ({report['files'] / report['pack_s']:,.0f} "
             f"files/s); listed in {report['list_s']:.2f} s",
             f"machine: {report['machine']}; files on {report['filesystem']}; load average "
             f"{report['load_before']:.1f} before, {report['load_after']:.1f} after; "
             f"{report['date']}", "",
             "| cache | runs | plain seq. | shards seq. | ratio | plain shuffled | shards "
             "shuffled | ratio | shards strict (tarfile) | ratio |",
             "|---|---|---|---|---|---|---|---|---|---|"]
    for cache in ("warm", "cold"):
        r = report.get(cache)
        if r is None:
            continue
        m = r["median_samples_per_s"]
        lines.append(f"| {cache} | {r['runs']} | {m['plain_sequential']:,.0f} | "
                     f"{m['shards_sequential']:,.0f} | {r['ratio_sequential']:.1f}x | "
                     f"{m['plain_shuffled']:,.0f} | {m['shards_shuffled']:,.0f} | "
                     f"{r['ratio_shuffled']:.1f}x | {m['shards_strict']:,.0f} | "
                     f"{r['ratio_strict']:.1f}x |")
    if report.get("cold") is None:
        lines.append(f"| cold | - | not measured: {report['cold_skipped']} | | | | | | | |")
    for cache in ("warm", "cold"):
        per_call = (report.get(cache) or {}).get("median_bytes_per_read_call", {})
        if any(v is not None for v in per_call.values()):
            lines.append(f"{cache}: KiB per read call: " + ", ".join(
                f"{w} {per_call[w] / 1024:,.1f}" for w in WAYS if per_call.get(w) is not None))
    return "\n".join(lines)


def machine():
    cpu = "unknown CPU"
    try:
        with open("/proc/cpuinfo") as f:
            cpu = next(l.split(":", 1)[1].strip() for l in f if l.startswith("model name"))
    except (OSError, StopIteration):
        pass
    return f"{cpu}, {os.cpu_count()} CPUs, Python {platform.python_version()}"


def filesystem(path):
    done = subprocess.run(["df", "-T", path], capture_output=True, text=True)
    rows = done.stdout.split("\n")
    return " ".join(rows[1].split()[:2]) if done.returncode == 0 and len(rows) > 1 else "unknown"


def main(argv):
    doc = __doc__.strip().split("\n\n")
    p = argparse.ArgumentParser(description=doc[0], epilog="\n\n".join(doc[1:]),
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--files", type=int, default=100_000, help="how many files (default 100000)")
    p.add_argument("--file-bytes", type=int, default=4096, help="bytes per file (default 4096)")
    p.add_argument("--per-dir", type=int, default=1000, help="files per directory (default 1000)")
    p.add_argument("--runs", type=int, default=5, help="warm runs of each way (default 5)")
    p.add_argument("--cold-runs", type=int, default=3,
                   help="cold runs of each way, if the page cache can be dropped (default 3)")
    p.add_argument("--shard-size", default="64Mi", help="cohort data pack --shard-size")
    p.add_argument("--work", help="where the files and shards go (default: a new directory in "
                                  "/var/tmp, removed after)")
    p.add_argument("--bin-dir", default=os.path.join(ROOT, "build", "bin"),
                   help="where cohort is (default build/bin)")
    p.add_argument("--json", help="write the report here too")
    args = p.parse_args(argv)
    if args.files < 1 or args.file_bytes < 0 or args.per_dir < 1 or args.runs < 1:
        p.error("--files, --per-dir and --runs must be at least 1, --file-bytes at least 0")

    work = args.work or tempfile.mkdtemp(prefix="data-pack-bench-", dir="/var/tmp")
    os.makedirs(work, exist_ok=True)
    src, out = os.path.join(work, "files"), os.path.join(work, "shards")
    try:
        print(f"data_pack_bench: making {args.files} files in {src}", file=sys.stderr)
        make_files(src, args.files, args.file_bytes, args.per_dir, seed=1)
        pack_s, index = pack(args.bin_dir, src, out, args.shard_size)
        started = time.monotonic()
        paths = list_files(src)
        list_s = time.monotonic() - started
        report = {"load_before": os.getloadavg()[0], "files": args.files, "file_bytes": args.file_bytes,
                  "shard_size": args.shard_size, "shards": len(index["shards"]),
                  "shard_bytes": index["bytes"], "pack_s": pack_s, "list_s": list_s,
                  "machine": machine(), "filesystem": filesystem(work),
                  "date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime())}
        report["warm"] = summarise(run_all(args, src, out, paths, args.runs, cold=False))
        if args.cold_runs > 0 and can_drop_caches():
            report["cold"] = summarise(run_all(args, src, out, paths, args.cold_runs, cold=True))
        else:
            report["cold_skipped"] = ("--cold-runs 0" if args.cold_runs <= 0
                                      else f"{DROP_CACHES} is not writable here")
        report["load_after"] = os.getloadavg()[0]
        print(table(report))
        if args.json:
            with open(args.json, "w") as f:
                json.dump(report, f, indent=1)
    finally:
        if not args.work:
            shutil.rmtree(work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
