#!/usr/bin/python3
"""bench/data_pack_bench.py on a small input, one run of each way, its report checked
(CTest: data_pack_bench_smoke, label bench; about 10 s).

    DATA_PACK_BENCH_BIN_DIR=build/bin /usr/bin/python3 bench/data_pack_bench_test.py
"""

import json
import os
import subprocess
import sys
import tempfile
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
BIN_DIR = os.environ.get("DATA_PACK_BENCH_BIN_DIR",
                         os.path.join(os.path.dirname(HERE), "build", "bin"))


class Smoke(unittest.TestCase):
    def test_a_small_run_reads_every_sample_each_way_and_reports_medians_and_ratios(self):
        with tempfile.TemporaryDirectory() as tmp:
            report_path = os.path.join(tmp, "report.json")
            work = os.path.join(tmp, "work")
            done = subprocess.run(
                [sys.executable, os.path.join(HERE, "data_pack_bench.py"), "--files", "600",
                 "--file-bytes", "1000", "--per-dir", "100", "--runs", "1", "--cold-runs", "0",
                 "--shard-size", "64Ki", "--bin-dir", BIN_DIR, "--work", work,
                 "--json", report_path],
                capture_output=True, text=True, timeout=120)
            self.assertEqual(done.returncode, 0, done.stderr)
            with open(report_path) as f:
                report = json.load(f)
            self.assertEqual(report["files"], 600)
            self.assertGreater(report["shards"], 5)  # 600 x (512 + 1024) bytes in 64 KiB shards
            warm = report["warm"]
            self.assertEqual(warm["runs"], 1)
            for way in ("plain_sequential", "plain_shuffled", "shards_sequential",
                        "shards_shuffled", "shards_strict"):
                self.assertGreater(warm["median_samples_per_s"][way], 0, way)
            m = warm["median_samples_per_s"]
            self.assertAlmostEqual(warm["ratio_sequential"],
                                   m["shards_sequential"] / m["plain_sequential"])
            self.assertAlmostEqual(warm["ratio_strict"],
                                   m["shards_strict"] / m["plain_sequential"])
            # Files of 1,000 bytes are read in two calls each (the bytes, then the end); shards
            # in large reads.
            per_call = warm["median_bytes_per_read_call"]
            if per_call["plain_sequential"] is not None:  # where /proc/self/io can be read
                self.assertAlmostEqual(per_call["plain_sequential"], 500, delta=50)
                self.assertGreater(per_call["shards_sequential"], 4 * per_call["plain_sequential"])
                self.assertIn("warm: KiB per read call: plain_sequential 0.5,", done.stdout)
            self.assertNotIn("cold", report)
            self.assertEqual(report["cold_skipped"], "--cold-runs 0")
            self.assertIn("| warm | 1 |", done.stdout)
            self.assertIn("| cold | - | not measured: --cold-runs 0", done.stdout)
            # Each shard, its member table, and index.json.
            self.assertEqual(len(os.listdir(os.path.join(work, "shards"))),
                             2 * report["shards"] + 1)

    def test_a_failed_packing_stops_it_with_the_reason(self):
        with tempfile.TemporaryDirectory() as tmp:
            done = subprocess.run(
                [sys.executable, os.path.join(HERE, "data_pack_bench.py"), "--files", "10",
                 "--shard-size", "12x", "--bin-dir", BIN_DIR, "--work", tmp],
                capture_output=True, text=True, timeout=60)
            self.assertNotEqual(done.returncode, 0)
            self.assertIn('cohort data pack failed: cohort data pack: --shard-size: "12x"',
                          done.stderr)


if __name__ == "__main__":
    unittest.main()
