// python/cohort_metrics.py writes what the C++ parser reads: the helper is run by the system's
// Python, and its output goes through MetricLineReader.
#include <gtest/gtest.h>
#include <sys/wait.h>

#include <cmath>
#include <cstdio>
#include <filesystem>
#include <string>

#include "common/strings.h"
#include "metrics/event_test_writer.h"
#include "metrics/line_protocol.h"

namespace cohort::metrics {
namespace {

namespace fs = std::filesystem;

struct PythonRun {
  int exit_code = -1;
  std::string output;  // standard output and error
};

// Runs `code` in /usr/bin/python3 with the helper importable, `env` before it (VAR=value ...).
PythonRun Python(const std::string& code, const std::string& env = "") {
  std::string dir = fs::path(COHORT_PYTHON_HELPER).parent_path().string();
  std::string command = "env " + env + " PYTHONPATH=" + ShellQuote(dir) + " /usr/bin/python3 -c " +
                        ShellQuote("import cohort_metrics\n" + code) + " 2>&1";
  PythonRun run;
  FILE* pipe = ::popen(command.c_str(), "r");
  if (pipe == nullptr) {
    ADD_FAILURE() << "popen " << command;
    return run;
  }
  char buffer[4096];
  size_t n;
  while ((n = std::fread(buffer, 1, sizeof buffer, pipe)) > 0) run.output.append(buffer, n);
  int status = ::pclose(pipe);
  run.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  return run;
}

MetricBatch ParseAll(const std::string& text) {
  MetricLineReader reader("helper");
  return reader.Feed(text, 99);
}

TEST(PythonHelper, PrintsLinesTheParserReads) {
  if (!fs::exists("/usr/bin/python3")) GTEST_SKIP() << "no /usr/bin/python3";
  PythonRun run = Python(
      "print('an ordinary log line')\n"
      "cohort_metrics.log(step=10, loss=0.31, acc=0.88)\n"
      "cohort_metrics.log(11, {'train/loss': 1e-7, 'eval/top-1': 3}, time=1700000000.5)\n"
      "cohort_metrics.log(step=12, loss=float('nan'), big=float('inf'), small=-float('inf'))\n");
  ASSERT_EQ(run.exit_code, 0) << run.output;
  MetricBatch batch = ParseAll(run.output);
  EXPECT_TRUE(batch.problems.empty()) << run.output;
  ASSERT_EQ(batch.points.size(), 7u) << run.output;
  EXPECT_EQ(batch.points[0], (MetricPoint{"", "loss", 10, 99, 0.31}));
  EXPECT_EQ(batch.points[1], (MetricPoint{"", "acc", 10, 99, 0.88}));
  EXPECT_EQ(batch.points[2], (MetricPoint{"", "train/loss", 11, 1700000000.5, 1e-7}));
  EXPECT_EQ(batch.points[3], (MetricPoint{"", "eval/top-1", 11, 1700000000.5, 3}));
  EXPECT_TRUE(std::isnan(batch.points[4].value));
  EXPECT_EQ(batch.points[5].value, INFINITY);
  EXPECT_EQ(batch.points[6].value, -INFINITY);
}

TEST(PythonHelper, CheckpointPrintsALineTheParserReads) {
  if (!fs::exists("/usr/bin/python3")) GTEST_SKIP() << "no /usr/bin/python3";
  PythonRun run = Python(
      "cohort_metrics.checkpoint()\n"
      "cohort_metrics.checkpoint(step=1200, path='/ckpt/step-1200.pt')\n"
      "try:\n"
      "    cohort_metrics.checkpoint(path='has a blank')\n"
      "except ValueError as e:\n"
      "    print('refused:', e)\n",
      "COHORT_METRICS_FILE=/nonexistent/metrics");
  ASSERT_EQ(run.exit_code, 0) << run.output;
  MetricBatch batch = ParseAll(run.output);
  EXPECT_TRUE(batch.problems.empty()) << run.output;
  ASSERT_EQ(batch.checkpoints.size(), 2u) << run.output;
  EXPECT_EQ(batch.checkpoints[0], (CheckpointMark{std::nullopt, "", 99}));
  EXPECT_EQ(batch.checkpoints[1], (CheckpointMark{1200, "/ckpt/step-1200.pt", 99}));
  EXPECT_NE(run.output.find("refused: path 'has a blank'"), std::string::npos) << run.output;
}

TEST(PythonHelper, AppendsToTheFileOfCohortMetricsFile) {
  if (!fs::exists("/usr/bin/python3")) GTEST_SKIP() << "no /usr/bin/python3";
  testing::TempDir dir;
  fs::path file = dir.path() / "metrics.txt";
  std::string env = "COHORT_METRICS_FILE=" + ShellQuote(file.string());
  PythonRun run =
      Python("cohort_metrics.log(step=1, loss=2.5)\ncohort_metrics.log(step=2, loss=2)\n", env);
  ASSERT_EQ(run.exit_code, 0) << run.output;
  EXPECT_EQ(run.output, "");  // nothing on standard output
  MetricBatch batch = ParseAll(testing::ReadWholeFile(file));
  EXPECT_TRUE(batch.problems.empty());
  EXPECT_EQ(batch.points,
            (std::vector<MetricPoint>{{"", "loss", 1, 99, 2.5}, {"", "loss", 2, 99, 2}}));
}

TEST(PythonHelper, RefusesWhatTheProtocolCannotCarry) {
  if (!fs::exists("/usr/bin/python3")) GTEST_SKIP() << "no /usr/bin/python3";
  for (const char* call :
       {"cohort_metrics.log(step=1, metrics={'bad name': 1})", "cohort_metrics.log(step=1)",
        "cohort_metrics.log(step=1.5, loss=1)", "cohort_metrics.log(step=1, loss='high')",
        "cohort_metrics.log(step=1, metrics={'time': 1})",
        "cohort_metrics.log(step=1, metrics={f'm{i}': i for i in range(65)})"}) {
    SCOPED_TRACE(call);
    PythonRun run =
        Python(std::string("try:\n  ") + call +
               "\nexcept ValueError as e:\n  print('refused:', e)\nelse:\n  print('taken')\n");
    EXPECT_EQ(run.exit_code, 0) << run.output;
    EXPECT_TRUE(run.output.starts_with("refused:")) << run.output;
  }
}

}  // namespace
}  // namespace cohort::metrics
