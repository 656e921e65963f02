#!/usr/bin/python3
"""What the master as a notebook's proxy costs (docs/runtimes.md, "Notebooks"): the same requests
to a notebook's Jupyter through the master (GET /api/v1/jobs/ID/notebook/..., the owner's token)
and straight to its port on the node (Jupyter's own token), in turns.

Starts a cluster (cohortd master and one agent, bench/bench_cluster.py), `cohort notebook`, and
reads the Jupyter token from the notebook process's environment (so: as root, or as the user the
task runs as). Then, each way:
    small     GET api/contents (a JSON answer of a few hundred bytes) on a kept-alive
              connection, --requests times: median and 95th percentile ms
    kernel    an execute_request of `1` and its reply over a kernel's WebSocket, --requests
              times: median ms
    download  GET files/big.bin, a --mib MiB file the kernel wrote, --runs times: median MB/s
              (through the master, an answer over 16 MiB is relayed as it comes)
    8 MiB     GET files/mid.bin, 8 MiB, --runs times: median MB/s (held whole by the master)
Prints a table of medians and their ratio; --json writes every figure.

    /usr/bin/python3 bench/notebook_proxy_bench.py                 # 256 MiB, 200 requests
    /usr/bin/python3 bench/notebook_proxy_bench.py --mib 20 --requests 20 --runs 1   # a smoke run
"""

import argparse
import http.client
import json
import os
import statistics
import sys
import tempfile
import time
import uuid
from urllib.parse import urlparse

from tornado import httpclient, ioloop, websocket

from bench_cluster import Cluster

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
MID = 8 * 1024 * 1024  # under the master's 16 MiB: an answer it holds whole


def jupyter_token(job_id):
    """JUPYTER_TOKEN of the Jupyter serving job `job_id`, from /proc."""
    needle = f"--NotebookApp.base_url=/api/v1/jobs/{job_id}/notebook/".encode()
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            with open(f"/proc/{pid}/cmdline", "rb") as f:
                if needle not in f.read():
                    continue
            with open(f"/proc/{pid}/environ", "rb") as f:
                for var in f.read().split(b"\0"):
                    if var.startswith(b"JUPYTER_TOKEN="):
                        return var.split(b"=", 1)[1].decode()
        except OSError:
            continue
    raise RuntimeError(f"no Jupyter process of job {job_id} (run as root?)")


class Way:
    """One way to the notebook: a host, a port and the Authorization header that opens it."""

    def __init__(self, name, host, port, authorization, base):
        self.name, self.host, self.port = name, host, port
        self.authorization, self.base = authorization, base
        self.conn = http.client.HTTPConnection(host, port, timeout=120)

    def get(self, path):
        self.conn.request("GET", self.base + path, headers={"Authorization": self.authorization})
        answer = self.conn.getresponse()
        body = answer.read()
        if answer.status != 200:
            raise RuntimeError(f"{self.name}: GET {path}: {answer.status} {body[:200]!r}")
        return body

    def post(self, path, body):
        self.conn.request("POST", self.base + path, body=json.dumps(body),
                          headers={"Authorization": self.authorization,
                                   "Content-Type": "application/json"})
        answer = self.conn.getresponse()
        data = answer.read()
        if answer.status not in (200, 201):
            raise RuntimeError(f"{self.name}: POST {path}: {answer.status} {data[:200]!r}")
        return json.loads(data)

    def ws_url(self, kernel):
        return f"ws://{self.host}:{self.port}{self.base}api/kernels/{kernel}/channels"


def execute_message(code):
    return {
        "header": {"msg_id": uuid.uuid4().hex, "username": "bench", "session": uuid.uuid4().hex,
                   "msg_type": "execute_request", "version": "5.3"},
        "parent_header": {}, "metadata": {}, "channel": "shell",
        "content": {"code": code, "silent": False, "store_history": False,
                    "user_expressions": {}, "allow_stdin": False},
    }


async def kernel_round_trips(way, kernel, count, setup_code=None):
    """Milliseconds from each execute_request to its execute_reply."""
    request = httpclient.HTTPRequest(way.ws_url(kernel),
                                     headers={"Authorization": way.authorization})
    conn = await websocket.websocket_connect(request)

    async def run(code):
        message = execute_message(code)
        start = time.perf_counter()
        await conn.write_message(json.dumps(message))
        while True:
            reply = await conn.read_message()
            if reply is None:
                raise RuntimeError(f"{way.name}: the kernel's socket closed")
            m = json.loads(reply)
            if (m.get("parent_header", {}).get("msg_id") == message["header"]["msg_id"]
                    and m["header"]["msg_type"] == "execute_reply"):
                return (time.perf_counter() - start) * 1000

    if setup_code:
        await run(setup_code)
    times = [await run("1") for _ in range(count)]
    conn.close()
    return times


def download(way, path, size):
    """MB/s of one GET of `path`, which must answer `size` bytes."""
    start = time.perf_counter()
    body = way.get(path)
    seconds = time.perf_counter() - start
    if len(body) != size:
        raise RuntimeError(f"{way.name}: {path}: {len(body)} bytes of {size}")
    return size / 1e6 / seconds


def percentile(values, p):
    values = sorted(values)
    return values[min(len(values) - 1, int(round(p / 100 * (len(values) - 1))))]


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--bin-dir", default=os.path.join(ROOT, "build", "bin"))
    parser.add_argument("--work", help="scratch directory (default: a temporary one)")
    parser.add_argument("--mib", type=int, default=256, help="size of the file downloaded")
    parser.add_argument("--requests", type=int, default=200,
                        help="small requests and kernel round trips, each way")
    parser.add_argument("--runs", type=int, default=5, help="downloads, each way")
    parser.add_argument("--json", help="write every figure here")
    args = parser.parse_args()
    args.bin_dir = os.path.abspath(args.bin_dir)  # the CLI runs in the scratch directory

    work = args.work or tempfile.mkdtemp(prefix="notebook-proxy-bench-")
    with Cluster(args.bin_dir, work) as cluster:
        link = json.loads(cluster.cli("notebook", "--gpus", "0", "--cpus", "1", "--no-browser",
                                      "-o", "json"))
        job_id = link["job"]
        job = cluster.get(f"/jobs/{job_id}")
        task = job["tasks"][0]
        base = f"/api/v1/jobs/{job_id}/notebook/"
        master = urlparse(cluster.url)
        ways = [
            Way("direct", task["host"], task["port"], f"token {jupyter_token(job_id)}", base),
            Way("via master", master.hostname, master.port, f"Bearer {cluster.token}", base),
        ]
        kernel = ways[0].post("api/kernels", {"name": "python3"})["id"]
        size = args.mib * 1024 * 1024
        loop = ioloop.IOLoop.current()
        loop.run_sync(lambda: kernel_round_trips(
            ways[0], kernel, 0,
            setup_code=f"open('big.bin', 'wb').write(bytes(range(256)) * {size // 256}); "
                       f"open('mid.bin', 'wb').write(bytes(range(256)) * {MID // 256})"))

        results = {w.name: {"small_ms": [], "kernel_ms": [], "download_mb_s": [], "mid_mb_s": []}
                   for w in ways}
        # In turns, so that a machine busier at one moment weighs on both ways alike.
        for _ in range(max(1, args.requests // 20)):
            for way in ways:
                for _ in range(20):
                    start = time.perf_counter()
                    way.get("api/contents")
                    results[way.name]["small_ms"].append((time.perf_counter() - start) * 1000)
            for way in ways:
                results[way.name]["kernel_ms"] += loop.run_sync(
                    lambda way=way: kernel_round_trips(way, kernel, 20))
        for _ in range(args.runs):
            for way in ways:
                results[way.name]["download_mb_s"].append(download(way, "files/big.bin", size))
                results[way.name]["mid_mb_s"].append(download(way, "files/mid.bin", MID))
        cluster.cli("kill", str(job_id))

    summary = {}
    for name, r in results.items():
        summary[name] = {
            "small_median_ms": statistics.median(r["small_ms"]),
            "small_p95_ms": percentile(r["small_ms"], 95),
            "kernel_median_ms": statistics.median(r["kernel_ms"]),
            "download_median_mb_s": statistics.median(r["download_mb_s"]),
            "mid_median_mb_s": statistics.median(r["mid_mb_s"]),
        }
    d, m = summary["direct"], summary["via master"]
    print(f"notebook proxy: {args.requests} small requests and kernel round trips, "
          f"{args.runs} downloads of {args.mib} MiB, each way")
    print("| what | direct | via master | ratio |")
    print("|---|---|---|---|")
    print(f"| small GET, median ms | {d['small_median_ms']:.2f} | {m['small_median_ms']:.2f} | "
          f"{m['small_median_ms'] / d['small_median_ms']:.2f} |")
    print(f"| small GET, p95 ms | {d['small_p95_ms']:.2f} | {m['small_p95_ms']:.2f} | "
          f"{m['small_p95_ms'] / d['small_p95_ms']:.2f} |")
    print(f"| kernel round trip, median ms | {d['kernel_median_ms']:.2f} | "
          f"{m['kernel_median_ms']:.2f} | {m['kernel_median_ms'] / d['kernel_median_ms']:.2f} |")
    print(f"| {args.mib} MiB download (relayed), median MB/s | {d['download_median_mb_s']:.0f} | "
          f"{m['download_median_mb_s']:.0f} | "
          f"{m['download_median_mb_s'] / d['download_median_mb_s']:.2f} |")
    print(f"| 8 MiB download (held whole), median MB/s | {d['mid_median_mb_s']:.0f} | "
          f"{m['mid_median_mb_s']:.0f} | {m['mid_median_mb_s'] / d['mid_median_mb_s']:.2f} |")
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"mib": args.mib, "requests": args.requests, "runs": args.runs,
                       "results": results, "summary": summary}, f, indent=2)
    return 0


if __name__ == "__main__":
    sys.exit(main())
