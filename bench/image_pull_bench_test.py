#!/usr/bin/python3
"""bench/image_pull_bench.py on a small image, one run of each mode, its report checked (as
root: the agent's podman is rootful).

    IMAGE_PULL_BENCH_BIN_DIR=build/bin /usr/bin/python3 bench/image_pull_bench_test.py
"""

import json
import os
import subprocess
import sys
import tempfile
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
BIN_DIR = os.environ.get("IMAGE_PULL_BENCH_BIN_DIR",
                         os.path.join(os.path.dirname(HERE), "build", "bin"))


class Smoke(unittest.TestCase):
    def test_cold_runs_pull_the_image_with_the_gpu_held_and_warm_ones_do_not(self):
        with tempfile.TemporaryDirectory() as tmp:
            report_path = os.path.join(tmp, "report.json")
            done = subprocess.run(
                [sys.executable, os.path.join(HERE, "image_pull_bench.py"), "--mib", "8",
                 "--runs", "1", "--bin-dir", BIN_DIR, "--work", os.path.join(tmp, "work"),
                 "--json", report_path],
                capture_output=True, text=True, timeout=240)
            self.assertEqual(done.returncode, 0, done.stderr)
            self.assertIn("GPU held before the command", done.stdout)
            self.assertIn("| cold |", done.stdout)
            self.assertIn("| warm |", done.stdout)
            with open(report_path) as f:
                report = json.load(f)
            self.assertEqual(report["mib"], 8)
            self.assertEqual(len(report["runs"]), 2)
            runs = {("cold" if r["cold"] else "warm"): r for r in report["runs"]}
            self.assertTrue(runs["cold"]["pulled"])
            self.assertFalse(runs["warm"]["pulled"])
            for run in runs.values():
                self.assertGreater(run["gpu_held_s"], 0)
                self.assertGreater(run["start_s"], 0)
                self.assertGreaterEqual(run["start_s"], run["gpu_held_s"])
            self.assertGreater(runs["cold"]["gpu_held_s"], runs["warm"]["gpu_held_s"])


if __name__ == "__main__":
    unittest.main()
