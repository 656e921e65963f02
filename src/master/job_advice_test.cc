// The advisor on the master's parts (master_parts_test_fixture.h): what JobAdvice gathers from
// the samples agents report, job by job, and the events it records. The rules themselves are
// Advisor.* (advisor_test.cc).
#include "master/job_advice.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <optional>
#include <string>
#include <vector>

#include "master/master_parts_test_fixture.h"

namespace cohort::master {
namespace {

using std::chrono::minutes;
using std::chrono::seconds;
using ::testing::HasSubstr;
using ::testing::Not;

// What one task read per second: bytes, calls.
struct Reads {
  int64_t bytes_per_s;
  int64_t calls_per_s;
};

class JobAdviceTest : public MasterPartsTest {
 protected:
  void SetUp() override {
    MasterPartsTest::SetUp();
    advice_.emplace(parts_->config, parts_->jobs, resources_, parts_->lifecycle, clock_);
  }

  // A gang of `replicas` tasks of one GPU each, one per node, running.
  JobId Running(int replicas) {
    for (int i = 0; i < replicas; ++i) AddNode("n" + std::to_string(i), 1);
    JobId id = Started(GangSpec(replicas, 1));
    for (int i = 0; i < replicas; ++i) Report("n" + std::to_string(i), TaskState::kRunning);
    EXPECT_EQ(job(id).state, JobState::kRunning);
    return id;
  }

  // Every 10 s for `length`, each agent reports its GPU `busy_percent` busy and its task using
  // half the CPU it asked for (not saturated) and reading `reads[i]`; the master ticks.
  void Feed(JobId id, Duration length, int busy_percent,
            const std::vector<std::optional<Reads>>& reads) {
    for (Timestamp end = clock_.Now() + length; clock_.Now() < end;) {
      clock_.Advance(seconds(10));
      const Timestamp now = clock_.Now();
      const Job& j = job(id);
      for (size_t i = 0; i < j.tasks.size(); ++i) {
        const Task& t = j.tasks[i];
        TaskSample sample{now, t.resources.milli_cpus / 2, 1 << 20};
        if (reads.at(i)) {
          sample.read_bytes_per_s = reads[i]->bytes_per_s;
          sample.read_calls_per_s = reads[i]->calls_per_s;
        }
        resources_.Record(t.node_id, {GpuSamples{t.gpus.at(0), {GpuSample{now, busy_percent, 0}}}},
                          {{j.IdOf(t), {sample}}});
      }
      advice_->Tick(now);
    }
  }

  ResourceHistory resources_;
  std::optional<JobAdvice> advice_;  // over the parts SetUp makes
};

constexpr Reads kSmallFiles{24'000 * 2048, 24'000};  // a Python loader of 4 KiB files

TEST_F(JobAdviceTest, TasksReadingManySmallFilesWithTheirGpusWaitingAreToldToPack) {
  JobId id = Running(2);
  Feed(id, minutes(3), 10, {kSmallFiles, kSmallFiles});
  EXPECT_THAT(EventsText(id),
              HasSubstr("advice: GPUs starved by small reads: GPU 10% busy while its tasks read "
                        "2.0 KiB per read call (48,000 calls/s): pack the small input files into "
                        "large shards with `cohort data pack` and read them with "
                        "python/cohort_shards.py (docs/data.md)"));
  auto now = advice_->For(id);
  ASSERT_EQ(now.size(), 1u);
  EXPECT_EQ(now[0].kind, AdviceKind::kSmallReads);
}

TEST_F(JobAdviceTest, ATaskWhoseReadsAreUnknownLeavesTheJobWithoutTheFinding) {
  // The other task's figures alone would say "small reads"; without the whole job's, nothing.
  JobId id = Running(2);
  Feed(id, minutes(3), 10, {kSmallFiles, std::nullopt});
  EXPECT_THAT(EventsText(id), Not(HasSubstr("advice")));
  EXPECT_TRUE(advice_->For(id).empty());
  // Once every task's reads are known, the window starts.
  Feed(id, minutes(3), 10, {kSmallFiles, kSmallFiles});
  EXPECT_THAT(EventsText(id), HasSubstr("advice: GPUs starved by small reads"));
}

}  // namespace
}  // namespace cohort::master
