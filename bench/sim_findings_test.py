#!/usr/bin/python3
"""The tables of bench/sim_findings.py from made-up runs whose means, spreads and ratios are
worked out here. Run: /usr/bin/python3 bench/sim_findings_test.py (CTest: sim_findings_selftest)."""

import json
import os
import sys
import tempfile
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import sim_findings as findings  # noqa: E402


def figures(policy, avg_jct_h, lost=0.0, unfinished=0, teams=()):
    return [{"policy": policy, "jobs": 1234, "finished": 1234 - unfinished,
             "unfinished": unfinished, "avg_jct_s": avg_jct_h * 3600,
             "median_jct_s": 1800, "p95_jct_s": 7200, "p99_jct_s": 36000,
             "p99_queueing_s": 900, "max_guaranteed_wait_s": 90, "preemptions_per_job": 0.25, "lost_gpu_hours": lost,
             "lost_share": lost / 1000, "teams": [
                 {"team": name, "jobs": jobs, "guaranteed_gpus": gpus, "avg_queueing_s": wait}
                 for name, jobs, gpus, wait in teams]}]


class Findings(unittest.TestCase):
    def setUp(self):
        self.dir = tempfile.TemporaryDirectory()
        self.lines = []

    def tearDown(self):
        self.dir.cleanup()

    def run_of(self, trace, seed, policy, wall, fig):
        path = os.path.join(self.dir.name, f"{trace}-{seed}-{policy}.json")
        with open(path, "w", encoding="utf-8") as f:
            json.dump(fig, f)
        self.lines.append("\t".join([trace, f"Trace {trace}", str(seed), policy, str(wall), "20",
                                     path]))

    def manifest(self):
        path = os.path.join(self.dir.name, "manifest.tsv")
        with open(path, "w", encoding="utf-8") as f:
            f.write("\n".join(self.lines) + "\n")
        return findings.read_manifest(path)

    def test_mean_and_spread_over_seeds_and_the_oracle_ratio(self):
        teams1 = [("team-10", 5, 2, 3600), ("team-2", 50, 30, 7200)]
        teams2 = [("team-10", 7, 4, 10800), ("team-2", 40, 28, 0)]
        self.run_of("syn", 1, "default", 10, figures("default", 4.0, lost=10, teams=teams1))
        oracle_teams = [("team-10", 6, 3, 0), ("team-2", 45, 29, 1800)]
        self.run_of("syn", 1, "sjf-oracle", 12, figures("sjf-oracle", 2.0, teams=oracle_teams))
        self.run_of("syn", 2, "default", 14, figures("default", 6.0, lost=30, unfinished=2,
                                                    teams=teams2))
        self.run_of("syn", 2, "sjf-oracle", 16, figures("sjf-oracle", 4.0, teams=oracle_teams))
        self.run_of("one", 1, "default", 1, figures("default", 1.5))
        text = findings.report(self.manifest())
        syn, one = text.split("### Trace one")
        # default: avg JCT 4 and 6 h, mean 5; lost 10 and 30 GPU-h; ratios 2.0 and 1.5.
        # Equal values over the seeds (the median: 0.5 h) print once.
        self.assertIn("| default | 5.00 (4.00–6.00) | 0.50 | 2.00 | 10.00 | 0.25 | 2 | 0.250 |",
                      syn)
        self.assertIn("| 20 (10–30) | 2.00 (1.00–3.00) | 1.0 (0.0–2.0) | 12.0 (10.0–14.0) |", syn)
        self.assertIn("| 1.75 (1.50–2.00) |", syn)
        self.assertIn("| sjf-oracle | 3.00 (2.00–4.00) |", syn)
        self.assertIn("| 14.0 (12.0–16.0) | 20 | 1.00 |", syn)
        self.assertIn("avg JCT / sjf-oracle", syn)
        self.assertIn("seeds 1, 2: mean (min–max)", syn)
        # Teams in natural order; jobs and quotas of the first policy; waits averaged over
        # seeds: team-10 under default (1 + 3) / 2 h.
        self.assertLess(syn.index("| team-2 |"), syn.index("| team-10 |"))
        self.assertIn("| team-10 | 6 (5–7) | 3 (2–4) | 2.00 | 0.00 |", syn)
        self.assertIn("| team-2 | 45 (40–50) | 29 (28–30) | 1.00 | 0.50 |", syn)
        # One seed: plain values, no ratio column without the oracle.
        self.assertIn("| default | 1.50 | 0.50 |", one)
        self.assertIn("seed 1: one run", one)
        self.assertNotIn("sjf-oracle", one)

    def test_a_bad_manifest_line_is_named(self):
        self.lines.append("syn\tonly three\tfields")
        with self.assertRaisesRegex(ValueError, r"manifest.tsv:1: expected 7"):
            self.manifest()


if __name__ == "__main__":
    unittest.main()
