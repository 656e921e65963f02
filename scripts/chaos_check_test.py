#!/usr/bin/python3
"""Each check of the chaos test fails on records made up to break it, and holds on good ones.
Run: /usr/bin/python3 scripts/chaos_check_test.py (CTest: chaos_check_selftest)."""

import os
import sys
import unittest
from datetime import datetime, timezone

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import chaos_check as check  # noqa: E402

T0 = 1_800_000_000.0


def lines(text):
    report = check.Report()
    parsed = check.parse_starts(text, report)
    assert not report.violations, report.violations
    return parsed


def iso(t):
    return datetime.fromtimestamp(t, timezone.utc).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def job(job_id, state, attempt=1, replicas=1, history=(), message="done"):
    return {"id": job_id, "name": f"chaos-{job_id}", "state": state, "attempt": attempt,
            "message": message, "finished_at": None,
            "spec": {"tasks": [{"role": "worker", "replicas": replicas}]},
            "history": [{"attempt": a, "finished_at": iso(t), "result": "r"} for a, t in history]}


class ParseTest(unittest.TestCase):
    def test_a_torn_line_is_a_violation(self):
        report = check.Report()
        parsed = check.parse_starts(f"1 1 0 node-1 start {T0} 0\n1 1 0 node-1 sta\n", report)
        self.assertEqual(len(parsed), 1)
        self.assertEqual(len(report.violations), 1)
        self.assertIn("line 2", report.violations[0])


class SingleStartTest(unittest.TestCase):
    def test_a_task_started_twice_is_a_violation(self):
        report = check.Report()
        check.check_single_starts(lines(f"1 2 0 node-1 start {T0} 0\n"
                                        f"1 2 1 node-2 start {T0} 0\n"
                                        f"1 2 0 node-1 start {T0 + 5} 1\n"), report)
        self.assertEqual(len(report.violations), 1)
        self.assertIn("job 1 attempt 2 task 0 started 2 times", report.violations[0])

    def test_attempts_are_distinct_tasks(self):
        report = check.Report()
        check.check_single_starts(lines(f"1 1 0 node-1 start {T0} 0\n"
                                        f"1 2 0 node-1 start {T0 + 5} 0\n"), report)
        self.assertEqual(report.violations, [])


class GpuOverlapTest(unittest.TestCase):
    def run_check(self, text, faults=()):
        report = check.Report()
        spans = check.intervals(lines(text), list(faults), T0 + 1000, report)
        check.check_gpu_overlap(spans, report)
        return report.violations

    def test_tasks_that_follow_one_another_on_a_gpu_hold(self):
        self.assertEqual(self.run_check(f"1 1 0 node-1 start {T0} 0\n"
                                        f"1 1 0 node-1 end {T0 + 3} 0 ok\n"
                                        f"2 1 0 node-1 start {T0 + 3.1} 0\n"
                                        f"2 1 0 node-1 end {T0 + 6} 0 ok\n"
                                        f"3 1 0 node-1 start {T0 + 1} 1\n"
                                        f"3 1 0 node-1 end {T0 + 2} 1 ok\n"), [])

    def test_two_tasks_on_one_gpu_at_once_is_a_violation(self):
        violations = self.run_check(f"1 1 0 node-1 start {T0} 0\n"
                                    f"2 1 0 node-1 start {T0 + 1} 0\n"
                                    f"1 1 0 node-1 end {T0 + 3} 0 term\n"
                                    f"2 1 0 node-1 end {T0 + 4} 0 ok\n")
        self.assertEqual(len(violations), 1)
        self.assertIn("GPU 0 of node-1: job 2 attempt 1 task 0", violations[0])

    def test_the_same_index_on_two_nodes_is_two_gpus(self):
        self.assertEqual(self.run_check(f"1 1 0 node-1 start {T0} 0\n"
                                        f"2 1 0 node-2 start {T0 + 1} 0\n"
                                        f"1 1 0 node-1 end {T0 + 3} 0 ok\n"
                                        f"2 1 0 node-2 end {T0 + 4} 0 ok\n"), [])

    def test_a_killed_machines_task_ends_at_the_kill(self):
        kill = check.Fault("machine_loss", "node-1", T0 + 2, T0 + 2.01)
        text = f"1 1 0 node-1 start {T0} 0\n"
        self.assertEqual(self.run_check(text + f"2 1 0 node-1 start {T0 + 9} 0\n"
                                               f"2 1 0 node-1 end {T0 + 10} 0 ok\n", [kill]), [])
        violations = self.run_check(text + f"2 1 0 node-1 start {T0 + 1} 0\n"
                                           f"2 1 0 node-1 end {T0 + 1.5} 0 ok\n", [kill])
        self.assertEqual(len(violations), 1)

    def test_a_task_that_never_ended_on_a_machine_never_killed_is_a_violation(self):
        violations = self.run_check(f"1 1 0 node-1 start {T0} 0\n",
                                    [check.Fault("pause", "node-1", T0 + 1, T0 + 9)])
        self.assertEqual(len(violations), 1)
        self.assertIn("never ended", violations[0])

    def test_a_paused_machines_stale_task_must_end_before_new_work_starts(self):
        pause = check.Fault("pause", "node-1", T0 + 1, T0 + 9)
        violations = self.run_check(f"1 1 0 node-1 start {T0} 0\n"
                                    f"2 1 0 node-1 start {T0 + 9.1} 0\n"
                                    f"1 1 0 node-1 end {T0 + 9.2} 0 term\n"
                                    f"2 1 0 node-1 end {T0 + 12} 0 ok\n", [pause])
        self.assertEqual(len(violations), 1)


class JobsTest(unittest.TestCase):
    def run_check(self, acknowledged, jobs, text=""):
        report = check.Report()
        check.check_jobs(acknowledged, jobs, lines(text), report)
        return report.violations

    ok = f"1 1 0 node-1 start {T0} 0\n1 1 0 node-1 end {T0 + 1} 0 ok\n"

    def test_a_succeeded_job_with_its_own_records_holds(self):
        self.assertEqual(self.run_check({"k1": 1}, [job(1, "SUCCEEDED")], self.ok), [])

    def test_a_lost_job_is_a_violation(self):
        violations = self.run_check({"k1": 1, "k2": 2}, [job(1, "SUCCEEDED")], self.ok)
        self.assertEqual(violations, ["job 2 (submission k2) was acknowledged and is gone"])

    def test_a_second_job_for_one_submission_is_a_violation(self):
        violations = self.run_check({"k1": 1}, [job(1, "SUCCEEDED"), job(2, "FAILED")], self.ok)
        self.assertEqual(len(violations), 1)
        self.assertIn("job 2", violations[0])

    def test_a_job_that_did_not_finish_is_a_violation(self):
        violations = self.run_check({"k1": 1}, [job(1, "RUNNING")], self.ok)
        self.assertEqual(len(violations), 1)
        self.assertIn("did not finish", violations[0])

    def test_a_failed_job_needs_a_reason(self):
        self.assertEqual(self.run_check({"k1": 1}, [job(1, "FAILED", message="budget")]), [])
        self.assertEqual(len(self.run_check({"k1": 1}, [job(1, "FAILED", message="")])), 1)

    def test_a_succeeded_job_whose_task_did_not_end_well_is_a_violation(self):
        violations = self.run_check({"k1": 1}, [job(1, "SUCCEEDED", replicas=2)],
                                    self.ok + f"1 1 1 node-2 start {T0} 0\n"
                                              f"1 1 1 node-2 end {T0 + 1} 0 term\n")
        self.assertEqual(len(violations), 1)
        self.assertIn("task 1", violations[0])
        violations = self.run_check({"k1": 1}, [job(1, "SUCCEEDED", attempt=2)], self.ok)
        self.assertEqual(len(violations), 1)
        self.assertIn("never recorded a start", violations[0])


class RecoveryTest(unittest.TestCase):
    loss = check.Fault("machine_loss", "node-1", T0 + 2, T0 + 2.01)
    text = (f"1 1 0 node-1 start {T0} 0\n1 1 1 node-2 start {T0} 0\n"
            f"1 1 1 node-2 end {T0 + 8} 0 term\n1 2 0 node-3 start {T0 + 9} 0\n")

    def run_check(self, requeued_at, master_ups=()):
        report = check.Report()
        jobs = [job(1, "RUNNING", attempt=2, history=[(1, requeued_at)])]
        requeued, started = check.check_recovery(lines(self.text), [self.loss], jobs,
                                                 list(master_ups), 10.0, report)
        return report.violations, requeued, started

    def test_a_requeue_within_the_bound_holds_and_is_measured(self):
        violations, requeued, started = self.run_check(T0 + 8)
        self.assertEqual(violations, [])
        self.assertAlmostEqual(requeued["machine_loss"][0], 6.0, places=3)
        self.assertAlmostEqual(started["machine_loss"][0], 7.0, places=3)

    def test_a_late_requeue_is_a_violation(self):
        violations, _, _ = self.run_check(T0 + 12.5)
        self.assertEqual(len(violations), 1)
        self.assertIn("bound 10.0 s", violations[0])

    def test_a_master_restart_gives_the_node_a_whole_timeout_again(self):
        violations, _, _ = self.run_check(T0 + 12.5, master_ups=[T0 + 5])
        self.assertEqual(violations, [])

    def test_an_attempt_that_never_ended_is_a_violation(self):
        report = check.Report()
        check.check_recovery(lines(self.text), [self.loss], [job(1, "RUNNING")], [], 10.0, report)
        self.assertEqual(len(report.violations), 1)
        self.assertIn("never ended", report.violations[0])

    def test_a_task_that_ended_before_the_loss_is_not_affected(self):
        report = check.Report()
        text = f"1 1 0 node-1 start {T0} 0\n1 1 0 node-1 end {T0 + 1} 0 ok\n"
        requeued, _ = check.check_recovery(lines(text), [self.loss], [job(1, "SUCCEEDED")], [],
                                           10.0, report)
        self.assertEqual(report.violations, [])
        self.assertEqual(dict(requeued), {})


class LateStartTest(unittest.TestCase):
    def test_a_start_after_the_attempt_ended_is_counted(self):
        report = check.Report()
        jobs = [job(1, "SUCCEEDED", attempt=2, history=[(1, T0 + 5), (2, T0 + 20)])]
        check.late_starts(lines(f"1 1 0 node-1 start {T0} 0\n1 1 1 node-2 start {T0 + 6} 0\n"
                                f"1 2 0 node-1 start {T0 + 7} 0\n"), jobs, [], report)
        self.assertEqual(report.figures["late_starts"], 1)
        self.assertEqual(report.violations, [])


class ClockStepTest(unittest.TestCase):
    def test_a_time_the_master_wrote_while_its_clock_was_stepped_is_taken_back(self):
        step = check.Fault("clock_step", "", T0 + 10, T0 + 15, offset=3600)
        stamp = lambda t: datetime.fromtimestamp(t, timezone.utc).strftime(
            "%Y-%m-%dT%H:%M:%S.%fZ")
        self.assertAlmostEqual(check.master_time(stamp(T0 + 3612), [step]), T0 + 12, places=3)
        self.assertAlmostEqual(check.master_time(stamp(T0 + 30), [step]), T0 + 30, places=3)
        back = check.Fault("clock_step", "", T0 + 10, T0 + 15, offset=-60)
        self.assertAlmostEqual(check.master_time(stamp(T0 - 48), [back]), T0 + 12, places=3)

    def test_a_requeue_stamped_an_hour_ahead_is_not_late(self):
        report = check.Report()
        loss = check.Fault("machine_loss", "node-1", T0 + 2, T0 + 2.01)
        step = check.Fault("clock_step", "", T0 + 1, T0 + 20, offset=3600)
        jobs = [job(1, "SUCCEEDED", attempt=2, history=[(1, T0 + 3600 + 8), (2, T0 + 30)])]
        check.check_recovery(lines(f"1 1 0 node-1 start {T0} 0\n"), [loss, step], jobs, [], 10.0,
                             report)
        self.assertEqual(report.violations, [])
        check.check_recovery(lines(f"1 1 0 node-1 start {T0} 0\n"), [loss], jobs, [], 10.0,
                             report)
        self.assertEqual(len(report.violations), 1)


if __name__ == "__main__":
    unittest.main()
