#!/usr/bin/python3
"""bench/sweep_waits.py's figures from made-up job rows whose windows, quantiles and sums are
worked out here. Run: /usr/bin/python3 bench/sweep_waits_test.py (CTest: sweep_waits_selftest)."""

import os
import sys
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import sweep_waits as sw  # noqa: E402


def job(submit, queued, preemptions=0, lost=0.0, sweep="", start=None):
    start = submit + queued if start is None else start
    return {"submit": str(submit), "start": str(start), "end": str(start + 100),
            "queued": str(queued), "preemptions": str(preemptions),
            "lost_gpu_seconds": str(lost), "sweep": sweep}


class SweepWaits(unittest.TestCase):
    def test_quantile_is_the_reports_nearest_rank(self):
        self.assertEqual(sw.quantile([], 0.5), 0.0)
        self.assertEqual(sw.quantile([30, 10, 20], 0.5), 20)
        self.assertEqual(sw.quantile([30, 10, 20], 0.95), 30)
        self.assertEqual(sw.quantile(list(range(1, 101)), 0.95), 95)

    def test_the_window_and_what_falls_in_it(self):
        rows = [job(0, 500, preemptions=1, lost=3600), job(100, 10), job(150, 30, preemptions=2),
                job(400, 900), job(120, 0, sweep="s", preemptions=3, lost=7200),
                job(200, 80, sweep="s"), job(250, 0, start=-1)]
        window = sw.sweep_window(rows)
        self.assertEqual(window, (120, 380))  # the last trial starts at 280 and ends at 380
        f = sw.scenario(rows, window)
        self.assertEqual(f["waits"], [30])  # 100 is before it, 400 after, 250 never started
        self.assertEqual(f["window_preemptions"], 2)
        self.assertEqual(f["preemptions"], 3)
        self.assertEqual(f["lost_h"], 1.0)
        self.assertEqual(f["trial_preemptions"], 3)
        self.assertEqual(f["trial_lost_h"], 2.0)

    def test_pooled_runs_and_the_table(self):
        a = {"waits": [10, 20], "window_preemptions": 1, "preemptions": 2, "lost_h": 1.0,
             "trial_preemptions": 0, "trial_lost_h": 0.0}
        b = {"waits": [7200], "window_preemptions": 0, "preemptions": 1, "lost_h": 0.5,
             "trial_preemptions": 4, "trial_lost_h": 1.5}
        pooled = sw.pool([a, b])
        self.assertEqual(pooled["waits"], [10, 20, 7200])
        self.assertEqual(pooled["preemptions"], 3)
        self.assertEqual(pooled["trial_preemptions"], 4)
        # Trials first (the first) with the lower p95 (20 s against 7200 s), then the higher.
        self.assertEqual(sw.compare(a, b), 0)
        self.assertEqual(sw.compare(b, a), 1)
        self.assertEqual(sw.compare(a, a), 2)
        text = sw.table({"without": pooled, "marked": pooled, "plain": pooled},
                        {"marked": [3600, 7200], "plain": [3600]}, [1, 2, 3], 6)
        self.assertIn("6 scenarios", text)
        self.assertIn("lower in 1, higher in 2, within a second in 3", text)
        self.assertIn("| without the sweep | 3 | 0.3 min | 2.00 h | 0.67 h | 1 | 3 | 2 | - | - | - |", text)
        self.assertIn("| trials first | 3 | 0.3 min | 2.00 h | 0.67 h | 1 | 3 | 2 | 4 | 1.5 | 1.5 h |",
                      text)


if __name__ == "__main__":
    unittest.main()
