#!/usr/bin/python3
"""bench/notebook_proxy_bench.py on a small file and few requests, its report checked (as root:
it reads the notebook's Jupyter token from /proc).

    NOTEBOOK_PROXY_BENCH_BIN_DIR=build/bin /usr/bin/python3 bench/notebook_proxy_bench_test.py
"""

import json
import os
import subprocess
import sys
import tempfile
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
BIN_DIR = os.environ.get("NOTEBOOK_PROXY_BENCH_BIN_DIR",
                         os.path.join(os.path.dirname(HERE), "build", "bin"))


class Smoke(unittest.TestCase):
    def test_both_ways_answer_and_every_figure_is_reported(self):
        with tempfile.TemporaryDirectory() as tmp:
            report_path = os.path.join(tmp, "report.json")
            done = subprocess.run(
                [sys.executable, os.path.join(HERE, "notebook_proxy_bench.py"), "--mib", "20",
                 "--requests", "20", "--runs", "1", "--bin-dir", BIN_DIR, "--work",
                 os.path.join(tmp, "work"), "--json", report_path],
                capture_output=True, text=True, timeout=240)
            self.assertEqual(done.returncode, 0, done.stderr)
            self.assertIn("| small GET, median ms |", done.stdout)
            self.assertIn("| 20 MiB download (relayed), median MB/s |", done.stdout)
            with open(report_path) as f:
                report = json.load(f)
            for way in ("direct", "via master"):
                figures = report["results"][way]
                self.assertEqual(len(figures["small_ms"]), 20)
                self.assertEqual(len(figures["kernel_ms"]), 20)
                self.assertEqual(len(figures["download_mb_s"]), 1)
                self.assertEqual(len(figures["mid_mb_s"]), 1)
                self.assertTrue(all(v > 0 for v in figures["small_ms"] + figures["download_mb_s"]))


if __name__ == "__main__":
    unittest.main()
