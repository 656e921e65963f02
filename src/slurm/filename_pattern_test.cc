#include "slurm/filename_pattern.h"

#include <gtest/gtest.h>

namespace cohort::slurm {
namespace {

// A step's task: job 128, step 0, task 3 on the second node.
FilenameFields StepTask() {
  FilenameFields f;
  f.job_id = 128;
  f.job_name = "train";
  f.user = "ada";
  f.node_name = "gpu02.cluster.lab";
  f.node_index = 1;
  f.task_id = 3;
  f.step_id = 0;
  return f;
}

TEST(ExpandFilenamePattern, ExpandsTheManPagesExamples) {
  FilenameFields f = StepTask();
  f.task_id = 0;
  EXPECT_EQ(ExpandFilenamePattern("job%J.out", f), "job128.0.out");
  EXPECT_EQ(ExpandFilenamePattern("job%4j.out", f), "job0128.out");
  EXPECT_EQ(ExpandFilenamePattern("job%2j-%2t.out", f), "job128-00.out");
}

TEST(ExpandFilenamePattern, ExpandsEveryField) {
  FilenameFields f = StepTask();
  f.array_job_id = 100;
  f.array_task_id = 27;
  f.restart_count = 2;
  EXPECT_EQ(ExpandFilenamePattern("%A_%a_%b/%j/%x-%u/%N/%n.%t.%s.%r", f),
            "100_27_7/128/train-ada/gpu02/1.3.0.2");
  EXPECT_EQ(ExpandFilenamePattern("%3a-%5A-%3N-%3x", f), "027-00100-gpu02-train");
}

TEST(ExpandFilenamePattern, TheBatchScriptIsStepBatch) {
  FilenameFields f = StepTask();
  f.step_id.reset();
  EXPECT_EQ(ExpandFilenamePattern("%J.%s", f), "128.batch");
}

TEST(ExpandFilenamePattern, AJobOutsideAnArrayIsItsOwnArrayAsInSlurm) {
  const FilenameFields f = StepTask();
  EXPECT_EQ(ExpandFilenamePattern("%A_%a_%b", f), "128_4294967294_4");
}

TEST(ExpandFilenamePattern, KeepsWhatIsNotAFieldAndHonoursEscapes) {
  const FilenameFields f = StepTask();
  EXPECT_EQ(ExpandFilenamePattern("100%%-%j", f), "100%-128");
  EXPECT_EQ(ExpandFilenamePattern("%z%S%5q%5%", f), "%z%S%5q%5%");
  EXPECT_EQ(ExpandFilenamePattern("out_%j%", f), "out_128");
  EXPECT_EQ(ExpandFilenamePattern("out_%12", f), "out_%12");
  EXPECT_EQ(ExpandFilenamePattern("%12j|%999j|%0j", f), "0000000128|0000000128|128");
  EXPECT_EQ(ExpandFilenamePattern("out\\_%j\\\\.log", f), "out_%j.log");
  EXPECT_EQ(ExpandFilenamePattern("", f), "");
}

TEST(ExpandFilenamePattern, PutsARelativeFileInTheWorkingDirectory) {
  FilenameFields f = StepTask();
  f.work_dir = "/home/ada/run";
  EXPECT_EQ(ExpandFilenamePattern("logs/%j.out", f), "/home/ada/run/logs/128.out");
  EXPECT_EQ(ExpandFilenamePattern("/scratch/%j.out", f), "/scratch/128.out");
  f.work_dir = "/home/ada/run%j/";
  EXPECT_EQ(ExpandFilenamePattern("o.txt", f), "/home/ada/run%j/o.txt");
}

TEST(DefaultOutputPattern, IsSlurms) {
  FilenameFields f = StepTask();
  f.step_id.reset();
  EXPECT_EQ(ExpandFilenamePattern(DefaultOutputPattern(false), f), "slurm-128.out");
  f.array_job_id = 120;
  f.array_task_id = 8;
  EXPECT_EQ(ExpandFilenamePattern(DefaultOutputPattern(true), f), "slurm-120_8.out");
}

}  // namespace
}  // namespace cohort::slurm
