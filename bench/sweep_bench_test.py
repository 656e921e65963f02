#!/usr/bin/python3
"""bench/sweep_bench.py's figures from made-up runs whose GPU times are worked out here, and the
specs it writes. Run: /usr/bin/python3 bench/sweep_bench_test.py Figures Specs Failures
(CTest: sweep_bench_selftest).

With SWEEP_BENCH_BIN_DIR set (where cohort, cohortd and cohort-run-task are), `Smoke` runs the
benchmark itself, one repeat of a tiny budget on a real local cluster, about a minute (CTest:
sweep_bench_smoke); without it, Smoke is skipped.
"""

import argparse
import json
import os
import re
import socket
import subprocess
import sys
import tempfile
import unittest
import xml.etree.ElementTree as ET

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import sweep_bench as bench  # noqa: E402
import sweep_bench_report as report  # noqa: E402


def trial(state, intervals, points, gpus=1):
    return {"state": state, "gpus": gpus, "intervals": intervals, "points": points}


def run(searcher, repeat, trials, wall=100.0):
    return {"searcher": searcher, "repeat": repeat, "seed": repeat, "max_trials": len(trials),
            "wall_s": wall, "state": "COMPLETED", "timed_out": False, "trials": trials}


# Two trials at once from t=1000: trial 1 holds 1 GPU from 1000 to 1010, trial 2 holds 2 GPUs
# from 1002 to 1006, then trial 3 from 1010 to 1020.
RUN = run("asha", 1, [
    trial("COMPLETED", [[1000, 1010]], [[1004, 1, 0.90], [1008, 2, 0.97], [1010, 3, 0.99]]),
    trial("STOPPED_EARLY", [[1002, 1006]], [[1005, 1, 0.95]], gpus=2),
    trial("COMPLETED", [[1010, 1020]], [[1015, 1, 0.985], [1020, 2, 0.5]]),
])
META = {"target": 0.98, "budget_gpu_s": 20, "metric": "val_acc", "title": "test",
        "description": "made up."}


class Figures(unittest.TestCase):
    def test_gpu_time_at_a_moment_sums_every_trial_held_until_then(self):
        self.assertEqual(report.gpu_seconds_until(RUN, 1000), 0)
        # 1004: trial 1 held 4 s, trial 2 2 s of 2 GPUs.
        self.assertEqual(report.gpu_seconds_until(RUN, 1004), 8)
        # 1010: trial 1 all 10 s, trial 2 all 4 s of 2 GPUs, trial 3 nothing yet.
        self.assertEqual(report.gpu_seconds_until(RUN, 1010), 18)
        self.assertEqual(report.total_gpu_seconds(RUN), 28)

    def test_progress_is_the_best_so_far_in_time_order(self):
        self.assertEqual(report.progress(RUN), [
            (8, 1004, 0.90), (11, 1005, 0.95), (16, 1008, 0.97), (18, 1010, 0.99),
            (23, 1015, 0.99), (28, 1020, 0.99)])

    def test_target_is_reached_by_the_first_point_at_or_above_it(self):
        # 0.99 at 1010 (18 GPU-s), 10 s after the first trial started; trial 3's 0.985 later.
        self.assertEqual(report.to_target(RUN, 0.98), (18, 10))
        self.assertEqual(report.to_target(RUN, 0.95), (11, 5))
        self.assertIsNone(report.to_target(RUN, 0.995))

    def test_best_within_budget_ignores_points_after_it(self):
        self.assertEqual(report.best_within(RUN, 17), 0.97)
        self.assertEqual(report.best_within(RUN, 18), 0.99)
        self.assertIsNone(report.best_within(RUN, 7))

    def test_summary_counts_early_stops(self):
        s = report.summarise(RUN, 0.98, 20)
        self.assertEqual((s["trials"], s["stopped_early"], s["best"], s["gpu_s"]), (3, 1, 0.99, 28))
        self.assertEqual((s["gpu_s_to_target"], s["wall_s_to_target"]), (18, 10))
        self.assertEqual(s["best_within_budget"], 0.99)

    def test_a_run_that_misses_the_target_has_no_time_and_sorts_last_in_the_median(self):
        self.assertEqual(report.median_of([10, None, 30]), 30)
        self.assertIsNone(report.median_of([10, None, None]))
        self.assertEqual(report.median_of([30, 10]), 20)
        self.assertEqual(report.low_median_of([0.9, None, 0.95]), 0.9)
        self.assertIsNone(report.low_median_of([None, None, 0.95]))

    def test_table_of_medians(self):
        runs = [RUN, run("asha", 2, [trial("COMPLETED", [[0, 50]], [[10, 1, 0.97]])], wall=60),
                run("asha", 3, [trial("COMPLETED", [[0, 30]], [[5, 1, 0.985]])], wall=40),
                run("random", 1, [trial("COMPLETED", [[0, 40]], [[40, 1, 0.96]])])]
        rows = report.aggregate([report.summarise(r, 0.98, 20) for r in runs])
        self.assertEqual([r["searcher"] for r in rows], ["asha", "random"])
        asha = rows[0]
        # Best 0.99, 0.97, 0.985: median 0.985. To target: 18, never, 5: median 18.
        self.assertEqual((asha["best"], asha["best_min"], asha["best_max"]), (0.985, 0.97, 0.99))
        self.assertEqual((asha["gpu_s_to_target"], asha["reached"]), (18, 2))
        self.assertEqual((asha["gpu_s"], asha["wall_s"]), (30, 60))
        text = report.markdown(rows, META)
        # Start: RUN's trials 4, 3 and 5 s to their first points (4), the others 10 and 5.
        self.assertIn("| asha | 3 | 1 (1) | 0 | 0.9850 (0.9700–0.9900) | 0.9850 | 18 (10) | 2/3 | "
                      "30 | 60 | 5.0 |", text)
        self.assertIn("| random | 1 | 1 (1) | 0 | 0.9600 | — | — | 0/1 | 40 | 100 | 40.0 |", text)

    def test_chart_is_well_formed_svg_with_a_line_per_searcher_and_run(self):
        runs = [RUN, run("random", 1, [trial("COMPLETED", [[1000, 1040]], [[1040, 1, 0.96]])])]
        text = report.svg(runs, META)
        root = ET.fromstring(text)
        ns = "{http://www.w3.org/2000/svg}"
        paths = root.iter(f"{ns}path")
        colours = [p.get("stroke") for p in paths]
        # Per searcher: one thin line per run, then its median.
        self.assertEqual(colours, [report.COLOURS["asha"]] * 2 + [report.COLOURS["random"]] * 2)
        labels = [t.text for t in root.iter(f"{ns}text")]
        self.assertIn("asha (1 run)", labels)
        self.assertIn("target 0.98", labels)

    def test_step_line_holds_the_best_until_the_next_point(self):
        curve = [(8, 0, 0.9), (16, 0, 0.97)]
        self.assertIsNone(report.step_value(curve, 7))
        self.assertEqual(report.step_value(curve, 15.9), 0.9)
        self.assertEqual(report.step_value(curve, 30), 0.97)

    def test_report_files_are_written_again_from_runs_json(self):
        with tempfile.TemporaryDirectory() as d:
            path = os.path.join(d, "runs.json")
            with open(path, "w", encoding="utf-8") as f:
                json.dump({"meta": META, "runs": [RUN]}, f)
            with open(os.devnull, "w") as devnull:
                stdout, sys.stdout = sys.stdout, devnull
                try:
                    self.assertEqual(report.main(["report", path, d]), 0)
                finally:
                    sys.stdout = stdout
            self.assertEqual(sorted(os.listdir(d)),
                             ["runs.json", "summary.json", "sweeps.md", "sweeps.svg"])
            with open(os.path.join(d, "summary.json"), encoding="utf-8") as f:
                self.assertEqual(json.load(f)["runs"][0]["gpu_s_to_target"], 18)


class Specs(unittest.TestCase):
    ARGS = argparse.Namespace(epoch_cost=0.15, epoch_seconds=0.3, start_cost=4.0, gpus=4)

    def test_costs_model_four_asha_epochs_a_trial(self):
        full, asha = bench.trial_costs(self.ARGS)
        self.assertAlmostEqual(full, 4 + 27 * 0.45)
        # 1 + 2/3 + 6/9 + 18/27 = 3 epochs, and one more a stopped trial finishes.
        self.assertAlmostEqual(asha, 4 + 4 * 0.45)

    def test_grid_is_coarsened_to_fit(self):
        self.assertEqual(bench.grid_counts(2), (1, 1, 1, 1))
        self.assertEqual(bench.grid_counts(14), (3, 1, 1, 1))
        self.assertEqual(bench.grid_counts(30), (5, 2, 1, 1))
        self.assertEqual(bench.grid_counts(1000), (5, 2, 2, 2))
        spec = bench.sweep_spec("grid", 2, 20, self.ARGS)
        hp = spec["hyperparameters"]
        self.assertEqual((hp["lr"]["count"], hp["hidden"]["count"]), (5, 1))
        self.assertEqual(spec["searcher"]["max_trials"], 15)
        self.assertNotIn("seed", spec["searcher"])  # a grid draws nothing
        self.assertEqual(hp["seed"], 2)  # but train.py's own seed differs per repeat
        # The space itself is untouched for the next spec.
        self.assertEqual(bench.SPACE["lr"]["count"], 5)

    def test_asha_and_random_specs(self):
        asha = bench.sweep_spec("asha", 3, 40, self.ARGS)
        self.assertEqual(asha["searcher"]["max_trials"], 40)
        self.assertEqual(asha["searcher"]["seed"], 3)
        self.assertEqual((asha["searcher"]["max_time"], asha["searcher"]["divisor"]), (27, 3))
        self.assertEqual(asha["searcher"]["max_concurrent_trials"], 4)
        self.assertEqual(asha["trial"]["tasks"][0]["command"][-2:], ["--epoch-seconds", "0.3"])
        random = bench.sweep_spec("random", 1, 9, self.ARGS)
        self.assertNotIn("divisor", random["searcher"])
        self.assertEqual(random["name"], "bench-random-1")


class Failures(unittest.TestCase):
    def test_a_sweep_of_failed_trials_ends_the_benchmark_with_their_output(self):
        class Logs:  # the one call check_failures makes of a cluster
            def get_text(self, path):
                self.path = path
                return "".join(f"line {i}\n" for i in range(20)) + "No module named 'sklearn'\n"

        ok = {"state": "COMPLETED", "job_id": 1, "points": [[0, 1, 0.5]]}
        failed = {"state": "FAILED", "job_id": 2, "points": []}
        silent = {"state": "COMPLETED", "job_id": 3, "points": []}
        logs = Logs()
        bench.check_failures(logs, "asha", 1, [ok, failed])  # some failed: only a warning
        with self.assertRaisesRegex(RuntimeError, r"(?s)job 2's output.*line 19\nNo module"):
            bench.check_failures(logs, "asha", 1, [failed, silent])
        self.assertEqual(logs.path, "/api/v1/jobs/2/logs")


@unittest.skipUnless(os.environ.get("SWEEP_BENCH_BIN_DIR"), "SWEEP_BENCH_BIN_DIR is not set")
class Smoke(unittest.TestCase):
    def test_one_tiny_run_of_each_searcher_then_the_cluster_is_down(self):
        with tempfile.TemporaryDirectory() as d:
            out, work = os.path.join(d, "out"), os.path.join(d, "work")
            # 10 GPU-s: a grid of 3 points, 1 random trial, 2 asha trials.
            p = subprocess.run(
                [sys.executable, os.path.join(bench.HERE, "sweep_bench.py"), "--out", out,
                 "--repeats", "1", "--budget", "10", "--epoch-seconds", "0", "--keep", work,
                 "--bin-dir", os.environ["SWEEP_BENCH_BIN_DIR"], "--sweep-timeout", "240"],
                capture_output=True, text=True, timeout=290, check=False)
            self.assertEqual(p.returncode, 0, p.stderr)
            port = int(re.search(r"on port (\d+)", p.stderr).group(1))
            with open(os.path.join(out, "runs.json"), encoding="utf-8") as f:
                runs = json.load(f)["runs"]
            self.assertEqual([(r["searcher"], r["max_trials"], r["state"]) for r in runs],
                             [("grid", 3, "COMPLETED"), ("random", 1, "COMPLETED"),
                              ("asha", 2, "COMPLETED")])
            for r in runs:
                self.assertEqual(len(r["trials"]), r["max_trials"])
                for t in r["trials"]:
                    # Every trial reported, and the GPU time read from its job is the sweep's.
                    self.assertGreater(len(t["points"]), 0, t)
                    held = sum(end - start for start, end in t["intervals"])
                    self.assertAlmostEqual(held, t["sweep_gpu_s"], delta=0.01, msg=t)
                    if t["state"] == "COMPLETED":
                        self.assertEqual(t["points"][-1][1], bench.EPOCHS)
            with open(os.path.join(out, "summary.json"), encoding="utf-8") as f:
                medians = json.load(f)["medians"]
            self.assertEqual([m["searcher"] for m in medians], ["grid", "random", "asha"])
            ET.parse(os.path.join(out, "sweeps.svg"))
            with open(os.path.join(out, "sweeps.md"), encoding="utf-8") as f:
                self.assertEqual(len(re.findall(r"^\| (grid|random|asha) \|", f.read(), re.M)), 3)
            # Taken down: no daemon's pid file left, and nothing listens on the master's port.
            cluster = os.path.join(work, "cluster")
            self.assertEqual([n for n in os.listdir(cluster) if n.endswith(".pid")], [])
            with self.assertRaises(OSError):
                socket.create_connection(("127.0.0.1", port), timeout=2).close()


if __name__ == "__main__":
    unittest.main()
