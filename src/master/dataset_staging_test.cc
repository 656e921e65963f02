// Placement and the pull (docs/data.md): a job goes to the nodes whose caches hold its datasets;
// placed where they are not, it is held back with no GPU held while those nodes fetch them, and
// starts once they report them, or, if a node cannot fetch them, starts anyway and pulls.
#include "master/dataset_staging.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "master/master_test_fixture.h"

namespace cohort::master {
namespace {

using ::testing::HasSubstr;
using ::testing::IsEmpty;
using ::testing::SizeIs;

class DatasetStagingTest : public MasterTest {
 protected:
  // A one-GPU job that reads default/NAME:1.
  JobId SubmitReading(const std::string& name) {
    JobSpec spec = MakeSpec(1, 1);
    spec.datasets = {DatasetRef{"default", name, 1}};
    auto job = master_->Submit(spec, "ada");
    EXPECT_TRUE(job.ok()) << job.status().ToString();
    return job.ok() ? job->id : 0;
  }
  std::string IdOf(JobId job) {
    auto ids = DatasetStaging::IdsOf(GetJob(job));
    EXPECT_THAT(ids, SizeIs(1));
    return ids.empty() ? "" : ids[0];
  }
  // The agent on `node` says what its cache holds and which fetches failed.
  DesiredState ReportCache(const std::string& node, std::vector<std::string> cached,
                           std::map<std::string, std::string> failures = {}) {
    AgentReport report = ReportOf(node, TaskState::kRunning);
    report.cached_datasets = std::move(cached);
    report.prefetch_failures = std::move(failures);
    auto answer = master_->nodes().Sync(node, report);
    EXPECT_TRUE(answer.ok()) << answer.status().ToString();
    return answer.ok() ? *answer : DesiredState{};
  }
  std::string Events(JobId id) {
    std::string all;
    auto events = master_->Events(id);
    EXPECT_TRUE(events.ok());
    for (const auto& e : *events) all += e.type + ": " + e.message + "\n";
    return all;
  }
  const Task* PlacedTask(JobId id) {
    const Job& job = GetJob(id);
    return job.tasks.empty() ? nullptr : &job.tasks[0];
  }
  int64_t AllocatedGpus(const std::string& node) {
    for (const auto& n : master_->nodes().List()) {
      if (n.node->info.id == node) return n.allocated.gpus;
    }
    return -1;
  }
};

TEST_P(DatasetStagingTest, AJobGoesToTheNodeThatHoldsItsDatasets) {
  AddNode("a", 1);
  AddNode("b", 1);
  JobId probe = SubmitReading("mnist");  // to learn the version's id; held back, then killed
  const std::string mnist = IdOf(probe);
  ASSERT_TRUE(master_->Kill(probe, "ada").ok());
  RunPosted();
  ReportCache("b", {mnist});

  JobId id = SubmitReading("mnist");
  RunPosted();
  ASSERT_NE(PlacedTask(id), nullptr) << GetJob(id).message;
  EXPECT_EQ(PlacedTask(id)->node_id, "b") << "a comes first, but b holds mnist";
  EXPECT_THAT(master_->nodes().DesiredFor("b")->prefetch, IsEmpty());
}

TEST_P(DatasetStagingTest, PlacedWhereItsDatasetsAreNotItWaitsWithoutGpusUntilTheNodeHasThem) {
  AddNode("a", 1);
  JobId id = SubmitReading("imagenet");
  RunPosted();
  EXPECT_EQ(GetJob(id).state, JobState::kPending);
  EXPECT_THAT(GetJob(id).message, HasSubstr("waits while node a fetch"));
  EXPECT_EQ(AllocatedGpus("a"), 0) << "no GPU is held while the node fetches";
  DesiredState desired = *master_->nodes().DesiredFor("a");
  ASSERT_THAT(desired.prefetch, SizeIs(1));
  EXPECT_EQ(desired.prefetch[0].ref, "default/imagenet:1");
  EXPECT_FALSE(desired.prefetch[0].store.empty()) << "with the job's access to the store";

  // Meanwhile a job that reads nothing may use the GPU; it ends.
  JobId other = Submit(1, 1);
  RunPosted();
  ASSERT_NE(PlacedTask(other), nullptr);
  Report("a", TaskState::kRunning);
  Report("a", TaskState::kSucceeded, 0);
  RunPosted();
  EXPECT_EQ(GetJob(id).state, JobState::kPending) << "still fetching";

  // The node has it: the job starts there, and the node is asked for nothing more.
  ReportCache("a", {IdOf(id)});
  RunPosted();
  ASSERT_NE(PlacedTask(id), nullptr) << GetJob(id).message;
  EXPECT_EQ(PlacedTask(id)->node_id, "a");
  EXPECT_THAT(master_->nodes().DesiredFor("a")->prefetch, IsEmpty());
  EXPECT_THAT(Events(id), HasSubstr("datasets: waits while node a fetch its datasets"));
  EXPECT_THAT(Events(id), HasSubstr("datasets: its datasets are on the nodes chosen for it"));
}

TEST_P(DatasetStagingTest, ANodeThatCannotFetchLetsTheJobStartAndPullItself) {
  AddNode("a", 1);
  JobId id = SubmitReading("imagenet");
  RunPosted();
  ASSERT_EQ(GetJob(id).state, JobState::kPending);
  ReportCache("a", {}, {{IdOf(id), "the cache is full"}});
  RunPosted();
  ASSERT_NE(PlacedTask(id), nullptr) << GetJob(id).message;
  EXPECT_EQ(PlacedTask(id)->node_id, "a");
  EXPECT_THAT(master_->nodes().DesiredFor("a")->prefetch, IsEmpty());
  EXPECT_THAT(Events(id), HasSubstr("node a could not fetch its datasets: the cache is full"));
}

TEST_P(DatasetStagingTest, AHeldBackJobStartsAnywayOnceTheLimitHasPassed) {
  AddNode("a", 1);
  JobId id = SubmitReading("imagenet");
  RunPosted();
  ASSERT_EQ(GetJob(id).state, JobState::kPending);
  clock_.Advance(DatasetStaging::kLimit);
  ReportCache("a", {});  // heard from, holding nothing yet
  master_->Tick();
  RunPosted();
  ASSERT_NE(PlacedTask(id), nullptr) << GetJob(id).message;
  EXPECT_THAT(Events(id), HasSubstr("starts without waiting for its datasets: its datasets were "
                                    "still being fetched after"));
}

// The node it waits for goes away mid-fetch: the job is let go at once, to be placed elsewhere.
TEST_P(DatasetStagingTest, ANodeThatGoesAwayMidFetchLetsTheJobGo) {
  AddNode("a", 1);
  AddNode("b", 1);
  JobSpec busy = MakeSpec(1, 1);
  ASSERT_TRUE(master_->Submit(busy, "ada").ok());  // takes node a
  RunPosted();
  JobId id = SubmitReading("imagenet");
  RunPosted();
  ASSERT_EQ(GetJob(id).state, JobState::kPending);
  ASSERT_THAT(GetJob(id).message, HasSubstr("waits while node b fetch"));
  ASSERT_TRUE(master_->nodes().Remove("b").ok());
  master_->Tick();
  RunPosted();
  EXPECT_THAT(Events(id), HasSubstr("starts without waiting for its datasets: node b can no "
                                    "longer run it"));
  EXPECT_EQ(GetJob(id).state, JobState::kPending) << "node a is busy; it waits for it";
}

// A job that waits for GPUs, with a reservation, has its datasets fetched ahead to the nodes it
// is reserved on, so that once they free up it starts at once.
TEST_P(DatasetStagingTest, AReservedJobsDatasetsAreFetchedAheadWhereItWillStart) {
  AddNode("a", 1);
  JobSpec busy = MakeSpec(1, 1);
  busy.max_runtime = std::chrono::hours(1);
  ASSERT_TRUE(master_->Submit(busy, "ada").ok());
  RunPosted();
  Report("a", TaskState::kRunning);
  JobId id = SubmitReading("imagenet");
  master_->Schedule();  // a full pass: reservations are made there
  RunPosted();
  ASSERT_EQ(GetJob(id).state, JobState::kPending);
  const PendingReason* reason = master_->scheduling().ReasonFor(id);
  ASSERT_NE(reason, nullptr);
  EXPECT_THAT(reason->reserved_nodes, ::testing::ElementsAre("a")) << reason->reason;
  DesiredState desired = *master_->nodes().DesiredFor("a");
  ASSERT_THAT(desired.prefetch, SizeIs(1));
  EXPECT_EQ(desired.prefetch[0].ref, "default/imagenet:1");

  // Fetched: nothing more is asked.
  ReportCache("a", {IdOf(id)});
  EXPECT_THAT(master_->nodes().DesiredFor("a")->prefetch, IsEmpty());
}

// --no-dataset-staging: the job starts where it was placed, and its tasks pull.
TEST_P(DatasetStagingTest, WithoutStagingTheJobStartsAtOnceWhereItWasPlaced) {
  stage_datasets_ = false;
  Start();
  AddNode("a", 1);
  JobId id = SubmitReading("imagenet");
  RunPosted();
  ASSERT_NE(PlacedTask(id), nullptr) << GetJob(id).message;
  EXPECT_EQ(PlacedTask(id)->node_id, "a");
  EXPECT_THAT(master_->nodes().DesiredFor("a")->prefetch, IsEmpty());
}

INSTANTIATE_TEST_SUITE_P(Modes, DatasetStagingTest, ::testing::Bool());

}  // namespace
}  // namespace cohort::master
