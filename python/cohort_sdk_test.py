#!/usr/bin/python3
"""The Python SDK (python/cohort, docs/python.md) against a real local cluster: a master and an
agent with two fake GPUs, started for the suite and stopped after it (CTest: cohort_sdk_test,
label integration). The built binaries are found in $COHORT_BIN_DIR (default build/bin).

    COHORT_BIN_DIR=build/bin /usr/bin/python3 python/cohort_sdk_test.py
"""

import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import textwrap
import time
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import cohort  # noqa: E402
from cohort import code as code_module  # noqa: E402

BIN_DIR = os.path.abspath(os.environ.get("COHORT_BIN_DIR",
                                         os.path.join(os.path.dirname(HERE), "build", "bin")))


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class LocalCluster:
    """cohortd master and one agent in a scratch directory."""

    def __init__(self, root):
        self.root = root
        self.procs = []

    def spawn(self, args, log):
        with open(os.path.join(self.root, log), "w") as out:
            self.procs.append(subprocess.Popen(args, stdout=out, stderr=subprocess.STDOUT,
                                               start_new_session=True))

    def start(self):
        url_file = os.path.join(self.root, "master.url")
        self.spawn([os.path.join(BIN_DIR, "cohortd"), "master", "--data-dir",
                    os.path.join(self.root, "master"), "--listen", f"127.0.0.1:{free_port()}",
                    "--url-file", url_file], "master.log")
        self.wait(lambda: os.path.exists(url_file))
        with open(url_file) as f:
            self.url = f.read().split("\n")[0]
        with open(os.path.join(self.root, "master", "admin-token")) as f:
            self.token = f.read().strip()
        first = free_port() // 100 * 100 % 50000 + 10000
        self.spawn([os.path.join(BIN_DIR, "cohortd"), "agent", "--master", self.url, "--name",
                    "node-0", "--data-dir", os.path.join(self.root, "agent"), "--cpus", "4",
                    "--memory", "16Gi", "--gpus", "2", "--ports", f"{first}-{first + 19}",
                    "--join-token-file", os.path.join(self.root, "master", "join-token"),
                    "--allow-root-tasks"], "agent.log")
        client = cohort.Client(self.url, self.token)
        self.wait(lambda: any(n["state"] == "READY"
                              for n in client._http.call("GET", "/nodes")["nodes"]))

    def stop(self):
        for p in reversed(self.procs):
            if p.poll() is None:
                p.send_signal(signal.SIGTERM)
        for p in self.procs:
            try:
                p.wait(timeout=20)
            except subprocess.TimeoutExpired:
                p.kill()
        subprocess.run(["pkill", "-f", os.path.join(self.root, "agent")], check=False)

    def wait(self, ready, timeout=30):
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            try:
                if ready():
                    return
            except (OSError, cohort.CohortError):
                pass
            time.sleep(0.05)
        raise RuntimeError(f"the local cluster did not start; see {self.root}")


class ConfigTest(unittest.TestCase):
    """The master and token are found as the CLI finds them (src/cli/credentials.h)."""

    def test_the_token_saved_for_the_master_is_used_unless_the_environment_names_one(self):
        from cohort import config
        with tempfile.TemporaryDirectory() as home:
            os.makedirs(os.path.join(home, "cohort"))
            with open(os.path.join(home, "cohort", "credentials.json"), "w") as f:
                json.dump({"masters": {"http://m:1": {"token": "saved"}}}, f)
            saved = {k: os.environ.pop(k, None)
                     for k in ("COHORT_MASTER", "COHORT_TOKEN", "XDG_CONFIG_HOME")}
            try:
                os.environ["XDG_CONFIG_HOME"] = home
                self.assertEqual(config.master_url(), "http://127.0.0.1:7420")
                self.assertEqual(config.token_for("http://m:1/"), "saved")
                self.assertEqual(config.token_for("http://other:1"), "")
                os.environ["COHORT_TOKEN"] = "from-env"
                self.assertEqual(config.token_for("http://m:1"), "from-env")
                self.assertEqual(config.token_for("http://m:1", "given"), "given")
                os.environ["COHORT_MASTER"] = "http://m:1/"
                self.assertEqual(cohort.Client().master, "http://m:1")
            finally:
                for k, v in saved.items():
                    os.environ.pop(k, None)
                    if v is not None:
                        os.environ[k] = v

    def test_ignore_rules_read_as_the_clis(self):
        rules = code_module.IgnoreRules("# comment\n*.log\n!keep.log\nbuild/\n/top.txt\n"
                                        "docs/**/draft.md\n")
        self.assertTrue(rules.ignored("a/b/x.log", False))
        self.assertFalse(rules.ignored("keep.log", False))
        self.assertTrue(rules.ignored("src/build", True))
        self.assertFalse(rules.ignored("src/build", False), "a trailing / is for directories")
        self.assertTrue(rules.ignored("top.txt", False))
        self.assertFalse(rules.ignored("sub/top.txt", False), "a leading / anchors")
        self.assertTrue(rules.ignored("docs/a/b/draft.md", False))
        self.assertTrue(rules.ignored("docs/draft.md", False))
        with self.assertRaises(cohort.CohortError):
            code_module.IgnoreRules("a/**/**/**/**/**/b\n")


class SdkTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.root = tempfile.mkdtemp(prefix="cohort-sdk-test-")
        cls.cluster = LocalCluster(cls.root)
        try:
            cls.cluster.start()
        except BaseException:
            cls.cluster.stop()
            raise
        # The client finds the master and token as the CLI does: from the environment here.
        os.environ["COHORT_MASTER"] = cls.cluster.url
        os.environ["COHORT_TOKEN"] = cls.cluster.token
        os.environ["XDG_CONFIG_HOME"] = os.path.join(cls.root, "config")
        cls.client = cohort.connect()
        # A project directory: the code that travels with jobs and launched functions.
        cls.project = os.path.join(cls.root, "project")
        os.makedirs(os.path.join(cls.project, "data"))
        with open(os.path.join(cls.project, "work.py"), "w") as f:
            f.write(textwrap.dedent("""\
                import os


                class Tally:
                    def __init__(self, total):
                        self.total = total


                def add(a, b, scale=1):
                    return Tally((a + b) * scale)


                def where():
                    return os.environ["CUDA_VISIBLE_DEVICES"], os.path.exists("work.py")


                def fails(text):
                    raise ValueError("bad input: " + text)


                def exits():
                    os._exit(3)
                """))
        with open(os.path.join(cls.project, "data", "big.bin"), "wb") as f:
            f.write(b"x" * 1000)
        with open(os.path.join(cls.project, ".cohortignore"), "w") as f:
            f.write("data/\n__pycache__/\n")

    @classmethod
    def tearDownClass(cls):
        cls.cluster.stop()
        shutil.rmtree(cls.root, ignore_errors=True)

    def setUp(self):
        self.cwd = os.getcwd()
        os.chdir(self.project)

    def tearDown(self):
        os.chdir(self.cwd)

    def test_a_submitted_spec_runs_and_its_logs_events_metrics_and_outputs_read_back(self):
        job = self.client.submit({
            "name": "sdk-spec",
            "tasks": [{"role": "worker", "replicas": 2, "resources": {"gpus": 1},
                       "command": ["sh", "-c",
                                   "echo hello from $COHORT_TASK_INDEX; "
                                   "echo cohort-metric step=1 loss=0.5; "
                                   "echo cohort-metric step=2 loss=0.25; "
                                   "printf result > $COHORT_OUTPUT_DIR/out.txt"]}]})
        self.assertIsInstance(job.id, int)
        job.wait(timeout=60, check=True)
        self.assertEqual(job.state, "SUCCEEDED")
        logs = job.logs()
        self.assertIn("[worker/0] hello from 0", logs)
        self.assertIn("[worker/1] hello from 1", logs)
        self.assertEqual(job.logs(task="worker/1").splitlines()[0], "hello from 1")
        self.assertIn("finished", [e["type"] for e in job.events()])
        self.assertEqual(job.points("loss", task="worker/0"), [(1, 0.5), (2, 0.25)])
        job.wait_for_outputs(timeout=60)
        self.assertEqual(job.artifacts(), [{"path": "out.txt", "size": 6}])
        self.assertEqual(job.read_artifact("out.txt"), b"result")
        self.assertEqual(cohort.job(job.id).state, "SUCCEEDED")

    def test_run_sends_the_current_directory_as_its_ignore_rules_say_and_follows_logs(self):
        job = cohort.run("ls; ls data 2>&1 | head -1; sleep 0.5; echo done", name="sdk-run")
        lines = list(job.logs(follow=True))
        self.assertIn("work.py\n", lines)
        self.assertNotIn("big.bin\n", lines, "data/ is in .cohortignore")
        self.assertEqual(lines[-1], "done\n")
        self.assertEqual(job.wait().state, "SUCCEEDED")
        # The same files the CLI would send: the counts the master committed agree with a scan.
        scan = code_module.scan(self.project)
        self.assertEqual(sorted(f.path for f in scan.files), [".cohortignore", "work.py"])
        committed = self.client.send_code(self.project)
        self.assertEqual((committed["file_count"], committed["bytes"]), (2, scan.bytes))
        cli = subprocess.run([os.path.join(BIN_DIR, "cohort"), "run", "--", "true"],
                             capture_output=True, text=True, check=True)
        self.assertIn("code: 2 files (", cli.stderr)

    def test_errors_carry_the_apis_code_message_and_details(self):
        with self.assertRaises(cohort.CohortError) as bad:
            self.client.submit({"name": "x", "tasks": [{"role": "w", "replica": 2,
                                                        "command": ["true"]}]})
        self.assertEqual(bad.exception.status, 400)
        self.assertEqual(bad.exception.code, "invalid_argument")
        self.assertIn('tasks[0].replica: unknown field; did you mean "replicas"?',
                      "\n".join(bad.exception.details + [bad.exception.message]))
        with self.assertRaises(cohort.CohortError) as missing:
            cohort.job(999999)
        self.assertEqual(missing.exception.code, "not_found")
        with self.assertRaises(cohort.JobFailed) as failed:
            self.client.submit({"name": "fails", "restart": {"max_attempts": 1},
                                "tasks": [{"role": "main", "command": ["sh", "-c", "exit 4"]}]}
                               ).wait(check=True)
        self.assertIn("exited with code 4", str(failed.exception))
        with self.assertRaises(cohort.CohortError) as unreachable:
            cohort.Client(f"http://127.0.0.1:{free_port()}", "t").whoami()
        self.assertIn("cannot reach the master", unreachable.exception.message)

    def test_launch_runs_a_function_on_a_gpu_and_returns_its_result(self):
        sys.path.insert(0, self.project)
        try:
            import work
        finally:
            sys.path.remove(self.project)
        tally = cohort.launch(work.add, (2, 3), {"scale": 10}, gpus=1, timeout=120)
        self.assertEqual(tally.total, 50)
        self.assertEqual(type(tally).__name__, "Tally")
        gpus, has_code = cohort.launch(work.where, gpus=2, timeout=120)
        self.assertEqual(sorted(gpus.split(",")), ["0", "1"])
        self.assertTrue(has_code)
        with self.assertRaises(cohort.RemoteError) as raised:
            cohort.launch(work.fails, ("oops",), gpus=0, timeout=120)
        self.assertIsInstance(raised.exception.__cause__, ValueError)
        self.assertIn("bad input: oops", raised.exception.traceback)
        with self.assertRaises(cohort.JobFailed):
            cohort.launch(work.exits, gpus=0, timeout=120)
        with self.assertRaises(cohort.CohortError) as local:
            cohort.launch(lambda: 1)
        self.assertIn("not defined at the top level", local.exception.message)

    def test_launch_from_a_script_runs_its_function_without_its_main_block(self):
        script = os.path.join(self.project, "script.py")
        with open(script, "w") as f:
            f.write(textwrap.dedent(f"""\
                import sys
                sys.path.insert(0, {HERE!r})
                import cohort


                def square(x):
                    return x * x


                if __name__ == "__main__":
                    print("result", cohort.launch(square, (7,), gpus=1, timeout=120))
                """))
        try:
            done = subprocess.run([sys.executable, script], capture_output=True, text=True,
                                  timeout=180, cwd=self.project)
        finally:
            os.remove(script)
        self.assertEqual(done.returncode, 0, done.stderr)
        self.assertEqual(done.stdout, "result 49\n")

    def test_the_python_sdk_example_fits_its_model_through_launch_and_as_a_job(self):
        example = os.path.join(os.path.dirname(HERE), "examples", "python-sdk")
        done = subprocess.run(["/usr/bin/python3", "launch_fit.py"], cwd=example,
                              env=dict(os.environ, PYTHONPATH=HERE), capture_output=True,
                              text=True, timeout=600)
        self.assertEqual(done.returncode, 0, done.stderr)
        first, second = done.stdout.splitlines()
        words = first.split()
        self.assertEqual(words[0], "launch:")
        self.assertAlmostEqual(float(words[2]), 3.0, delta=0.1)  # weight
        self.assertAlmostEqual(float(words[4]), 1.0, delta=0.1)  # bias
        self.assertRegex(second, r"^job \d+: SUCCEEDED, loss [0-9.]+ at step 0 -> [0-9.]+ at step 50$")

    def test_an_array_and_a_job_that_depends_on_it(self):
        first = cohort.run("echo $COHORT_ARRAY_INDEX", array="0-2%2", context=False, name="arr")
        jobs = self.client.array(first.id)
        self.assertEqual([j.record["array"]["index"] for j in jobs], [0, 1, 2])
        after = cohort.run("echo after", depends_on=[jobs[-1].id], context=False)
        for job, index in zip(jobs, range(3)):
            self.assertEqual(job.wait(timeout=60, check=True).logs(), f"{index}\n")
        self.assertEqual(after.wait(timeout=60, check=True).logs(), "after\n")
        with self.assertRaises(cohort.CohortError) as ended:
            self.client.kill_array(first.id)
        self.assertEqual(ended.exception.status, 409)

    def test_a_sweep_runs_its_trials_and_names_the_best(self):
        sweep = self.client.sweep({
            "name": "sdk-sweep",
            "trial": {"tasks": [{"role": "worker", "resources": {"gpus": 1},
                                 "command": ["sh", "-c", "echo cohort-metric step=1 acc=${hp.x}"]}]},
            "hyperparameters": {"x": {"type": "categorical", "vals": [1, 3, 2]}},
            "searcher": {"name": "grid", "metric": "acc", "mode": "max",
                         "max_concurrent_trials": 2}})
        sweep.wait(timeout=120)
        self.assertEqual(sweep.state, "COMPLETED")
        self.assertEqual(len(sweep.trials), 3)
        self.assertEqual(sweep.best["hparams"], {"x": 3})
        self.assertEqual(sweep.trial_job(sweep.best["id"]).state, "SUCCEEDED")


if __name__ == "__main__":
    unittest.main()
