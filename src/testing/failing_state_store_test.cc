#include "testing/failing_state_store.h"

#include <gtest/gtest.h>

#include "testing/memory_state_store.h"
#include "testing/state_store_contract.h"

namespace cohort::testing {
namespace {

using Call = FailingStateStore::Call;

// With nothing armed the decorator must be invisible: it passes the whole contract.
class FailingOverMemoryBackend : public StateStoreBackend {
 public:
  StatusOr<std::unique_ptr<state::StateStore>> Open() override {
    return std::unique_ptr<state::StateStore>(std::make_unique<FailingStateStore>(disk_.Reopen()));
  }

 private:
  MemoryStateStore disk_;
};

INSTANTIATE_TEST_SUITE_P(FailingOverMemory, StateStoreContract,
                         ::testing::Values(StateStoreContractParam{
                             "FailingOverMemory",
                             [] { return std::make_unique<FailingOverMemoryBackend>(); }}),
                         StateStoreContractParamName);

class FailingStateStoreTest : public ::testing::Test {
 protected:
  FailingStateStoreTest() : store_(disk_.Reopen()) {}

  static Job SomeJob() {
    Job job;
    job.spec.name = "resnet";
    TaskGroupSpec g;
    g.role = "worker";
    g.resources = Resources{1, 1000, 1LL << 30};
    g.command = {"true"};
    job.spec.tasks.push_back(g);
    return job;
  }
  size_t StoredJobs() { return disk_.LoadJobs()->size(); }
  size_t StoredTeams() { return disk_.LoadTeams()->size(); }

  MemoryStateStore disk_;  // what the decorator wraps, read around it
  FailingStateStore store_;
};

TEST_F(FailingStateStoreTest, FailWritesFailsEveryWriteAndForwardsNone) {
  auto job = store_.CreateJob(SomeJob(), {});
  ASSERT_TRUE(job.ok());
  ASSERT_TRUE(store_.SaveTeam(TeamQuota{"vision", 4, std::nullopt}).ok());

  store_.FailWrites(true);
  auto created = store_.CreateJob(SomeJob(), {});
  ASSERT_FALSE(created.ok());
  EXPECT_EQ(created.status().code(), StatusCode::kInternal);
  EXPECT_EQ(created.status().message(), "injected failure: disk full");
  Job changed = *job;
  changed.state = JobState::kRunning;
  EXPECT_FALSE(store_.SaveJob(changed, {JobEvent{job->id, {}, "running", ""}}).ok());
  EXPECT_FALSE(store_.SaveTeam(TeamQuota{"nlp", 1, std::nullopt}).ok());
  EXPECT_FALSE(store_.DeleteTeam("vision").ok());
  Node node;
  node.info.id = "node-a";
  node.info.address = "10.0.0.1";
  EXPECT_FALSE(store_.SaveNode(node).ok());
  EXPECT_EQ(store_.InjectedFailures(), 5);

  // Nothing reached the wrapped store; reads still go through.
  EXPECT_EQ(StoredJobs(), 1u);
  EXPECT_EQ(disk_.LoadJobs()->at(0).state, JobState::kPending);
  EXPECT_TRUE(disk_.LoadEvents(job->id)->empty());
  EXPECT_EQ(StoredTeams(), 1u);
  EXPECT_TRUE(disk_.LoadNodes()->empty());
  EXPECT_EQ(store_.LoadJobs()->size(), 1u);

  store_.FailWrites(false);
  EXPECT_TRUE(store_.SaveJob(changed, {}).ok());
  auto next = store_.CreateJob(SomeJob(), {});
  ASSERT_TRUE(next.ok());
  EXPECT_EQ(next->id, 2);  // the failed create took no id
}

TEST_F(FailingStateStoreTest, FailNextWritesFailsThatManyThenRecovers) {
  store_.FailNextWrites(2);
  EXPECT_FALSE(store_.CreateJob(SomeJob(), {}).ok());
  EXPECT_FALSE(store_.SaveTeam(TeamQuota{"vision", 4, std::nullopt}).ok());
  EXPECT_TRUE(store_.SaveTeam(TeamQuota{"vision", 4, std::nullopt}).ok());
  EXPECT_TRUE(store_.CreateJob(SomeJob(), {}).ok());
  EXPECT_EQ(store_.InjectedFailures(), 2);
  EXPECT_EQ(StoredJobs(), 1u);
  EXPECT_EQ(StoredTeams(), 1u);
}

TEST_F(FailingStateStoreTest, OnlyTheNamedKindsFail) {
  auto job = store_.CreateJob(SomeJob(), {});
  ASSERT_TRUE(job.ok());

  store_.FailWrites(true, {Call::kSaveJob});
  EXPECT_FALSE(store_.SaveJob(*job, {}).ok());
  EXPECT_TRUE(store_.CreateJob(SomeJob(), {}).ok());
  EXPECT_TRUE(store_.SaveTeam(TeamQuota{"vision", 4, std::nullopt}).ok());
  EXPECT_FALSE(store_.SaveJob(*job, {}).ok());

  // Other kinds neither fail nor use up the count.
  store_.FailNextWrites(1, {Call::kSaveTeam, Call::kDeleteTeam});
  EXPECT_TRUE(store_.SaveJob(*job, {}).ok());
  EXPECT_TRUE(store_.CreateJob(SomeJob(), {}).ok());
  EXPECT_FALSE(store_.DeleteTeam("vision").ok());
  EXPECT_TRUE(store_.DeleteTeam("vision").ok());
  EXPECT_EQ(store_.InjectedFailures(), 3);
  EXPECT_EQ(StoredJobs(), 3u);
  EXPECT_EQ(StoredTeams(), 0u);
}

TEST_F(FailingStateStoreTest, InjectedErrorCanBeChosen) {
  store_.SetInjectedError(Status::Unavailable("injected failure: database locked"));
  store_.FailNextWrites(1);
  Status s = store_.SaveTeam(TeamQuota{"vision", 4, std::nullopt});
  EXPECT_EQ(s.code(), StatusCode::kUnavailable);
  EXPECT_EQ(s.message(), "injected failure: database locked");
}

TEST_F(FailingStateStoreTest, CountsEveryCallFailedOrNot) {
  store_.FailNextWrites(1, {Call::kCreateJob});
  EXPECT_FALSE(store_.CreateJob(SomeJob(), {}).ok());
  auto job = store_.CreateJob(SomeJob(), {});
  ASSERT_TRUE(job.ok());
  ASSERT_TRUE(store_.SaveJob(*job, {}).ok());
  (void)store_.LoadJobs();
  (void)store_.LoadJobs();
  (void)store_.LoadEvents(job->id);
  (void)store_.LoadTeams();
  (void)store_.LoadNodes();

  EXPECT_EQ(store_.Calls(Call::kCreateJob), 2);
  EXPECT_EQ(store_.Calls(Call::kSaveJob), 1);
  EXPECT_EQ(store_.Calls(Call::kLoadJobs), 2);
  EXPECT_EQ(store_.Calls(Call::kLoadEvents), 1);
  EXPECT_EQ(store_.Calls(Call::kLoadTeams), 1);
  EXPECT_EQ(store_.Calls(Call::kLoadNodes), 1);
  EXPECT_EQ(store_.Calls(Call::kSaveTeam), 0);
  EXPECT_EQ(store_.Calls(Call::kDeleteTeam), 0);
  EXPECT_EQ(store_.Calls(Call::kSaveNode), 0);
  EXPECT_EQ(store_.InjectedFailures(), 1);
}

TEST_F(FailingStateStoreTest, ErrorsOfTheWrappedStorePassThrough) {
  EXPECT_EQ(store_.DeleteTeam("never").code(), StatusCode::kNotFound);
  Job stranger = SomeJob();
  stranger.id = 7;
  EXPECT_EQ(store_.SaveJob(stranger, {}).code(), StatusCode::kNotFound);
  EXPECT_EQ(store_.InjectedFailures(), 0);
}

TEST(FailingStateStoreDeathTest, ReadsCannotBeArmed) {
  FailingStateStore store(std::make_unique<MemoryStateStore>());
  EXPECT_DEATH(store.FailWrites(true, {Call::kLoadJobs}), "IsWrite");
}

}  // namespace
}  // namespace cohort::testing
