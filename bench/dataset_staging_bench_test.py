#!/usr/bin/python3
"""bench/dataset_staging_bench.py on a small dataset, one run of each mode, its report checked
(CTest: dataset_staging_bench_smoke, label bench; about 20 s).

    DATASET_STAGING_BENCH_BIN_DIR=build/bin /usr/bin/python3 bench/dataset_staging_bench_test.py
"""

import json
import os
import subprocess
import sys
import tempfile
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
BIN_DIR = os.environ.get("DATASET_STAGING_BENCH_BIN_DIR",
                         os.path.join(os.path.dirname(HERE), "build", "bin"))


class Smoke(unittest.TestCase):
    def test_staged_runs_hold_the_job_back_and_read_from_the_cache_and_unstaged_ones_pull(self):
        with tempfile.TemporaryDirectory() as tmp:
            report_path = os.path.join(tmp, "report.json")
            done = subprocess.run(
                [sys.executable, os.path.join(HERE, "dataset_staging_bench.py"), "--mib", "8",
                 "--files", "4", "--runs", "1", "--bin-dir", BIN_DIR, "--work",
                 os.path.join(tmp, "work"), "--json", report_path],
                capture_output=True, text=True, timeout=240)
            self.assertEqual(done.returncode, 0, done.stderr)
            self.assertIn("GPU held before the command", done.stdout)
            with open(report_path) as f:
                report = json.load(f)
            runs = {("staged" if r["staged"] else "unstaged"): r for r in report["runs"]}
            self.assertTrue(runs["staged"]["held_back"])
            self.assertTrue(runs["staged"]["from_cache"])
            self.assertFalse(runs["unstaged"]["held_back"])
            self.assertFalse(runs["unstaged"]["from_cache"])
            for run in runs.values():
                self.assertGreater(run["gpu_held_s"], 0)
                self.assertGreaterEqual(run["start_s"], run["gpu_held_s"])


if __name__ == "__main__":
    unittest.main()
