// JobBook: jobs in memory against the store (created only once stored, written with their holds
// and history change, loaded back), pending() and active() by state, request ids and task ids.
#include "master/job_book.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <vector>

#include "testing/failing_state_store.h"
#include "testing/memory_state_store.h"

namespace cohort::master {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::IsEmpty;
using Call = cohort::testing::FailingStateStore::Call;

class Announced final : public MasterListener {
 public:
  void OnJobChanged(JobId id) override { jobs.push_back(id); }
  void OnNodeChanged(const std::string&) override {}
  std::vector<JobId> jobs;
};

class JobBookTest : public ::testing::Test {
 protected:
  JobBookTest() { journal_.SetListener(&announced_); }

  // Two workers with one GPU each.
  Job NewJob(const std::string& team = "vision", const std::string& request_id = "") const {
    Job job;
    job.user = "ada";
    job.submitted_at = clock_.Now();
    job.request_id = request_id;
    job.spec.name = "train";
    job.spec.team = team;
    job.spec.framework = Framework::kPyTorch;
    TaskGroupSpec g;
    g.role = "worker";
    g.replicas = 2;
    g.resources = Resources{1, 1000, 1LL << 30};
    g.command = {"true"};
    job.spec.tasks.push_back(g);
    return job;
  }

  Job& Created(const std::string& team = "vision", const std::string& request_id = "") {
    auto job = book_.Create(NewJob(team, request_id), {});
    EXPECT_TRUE(job.ok()) << job.status().ToString();
    return **job;
  }

  // Its first attempt placed now, its tasks sent with desired-state `version`.
  void Place(Job& job, uint64_t version = 1) {
    job.state = JobState::kStarting;
    job.attempt = 1;
    job.placed_at = clock_.Now();
    job.tasks.clear();
    for (int i = 0; i < 2; ++i) {
      Task t;
      t.role = "worker";
      t.index = t.rank = i;
      t.resources = Resources{1, 1000, 1LL << 30};
      t.node_id = "a";
      t.gpus = {i};
      t.held_since = clock_.Now();
      t.assigned_version = version;
      job.tasks.push_back(t);
    }
    book_.Reindex(job);
  }

  // Its tasks ran `ran` and ended; its attempt is recorded, as the lifecycle does.
  void End(Job& job, JobState state, Duration ran = std::chrono::hours(1)) {
    for (auto& t : job.tasks) t.started_at = job.placed_at;
    clock_.Advance(ran);
    for (auto& t : job.tasks) {
      t.state = TaskState::kSucceeded;
      t.finished_at = clock_.Now();
    }
    job.state = state;
    job.finished_at = clock_.Now();
    RecordAttempt(job, AttemptSummary{job.attempt, job.placed_at, clock_.Now(), "ended", {}});
    book_.Reindex(job);
  }

  std::vector<state::TaskUsage> Holds() {
    std::vector<state::TaskUsage> holds;
    Status s = disk_.ScanUsage(state::UsageScan{clock_.Now() - std::chrono::hours(24),
                                                clock_.Now() + std::chrono::hours(1), "", ""},
                               [&](const state::TaskUsage& u) { holds.push_back(u); });
    EXPECT_TRUE(s.ok()) << s.ToString();
    // A scan promises no order.
    std::sort(holds.begin(), holds.end(),
              [](const auto& a, const auto& b) { return a.task < b.task; });
    return holds;
  }

  cohort::testing::MemoryStateStore disk_;
  cohort::testing::FailingStateStore store_{disk_.Reopen()};
  std::vector<Status> fail_stops_;
  Journal journal_{store_, [this](const Status& s) { fail_stops_.push_back(s); }};
  ManualClock clock_;
  JobBook book_{journal_, clock_, scheduler::RuntimeHistory::kMaxKeys};
  Announced announced_;
};

TEST_F(JobBookTest, CreateKeepsTheJobUnderTheStoresIdAsPendingWithItsEvents) {
  auto job = book_.Create(NewJob(), {book_.Event(NewJob(), "submitted", "by ada")});
  ASSERT_TRUE(job.ok()) << job.status().ToString();
  EXPECT_EQ((*job)->id, 1);
  EXPECT_EQ(book_.Find(1), *job);
  EXPECT_THAT(book_.pending(), ElementsAre(1));
  auto events = book_.Events(1);
  ASSERT_TRUE(events.ok());
  ASSERT_EQ(events->size(), 1u);
  EXPECT_EQ((*events)[0].type, "submitted");
  EXPECT_EQ(book_.Events(2).status().code(), StatusCode::kNotFound);
}

TEST_F(JobBookTest, ACreateTheStoreRefusesChangesNothing) {
  JobId first = Created().id;
  store_.FailNextWrites(1, {Call::kCreateJob});
  auto job = book_.Create(NewJob("vision", "r-1"), {});
  EXPECT_FALSE(job.ok());
  EXPECT_EQ(book_.size(), 1u);
  EXPECT_THAT(book_.pending(), ElementsAre(first));
  EXPECT_EQ(book_.FindRequest("ada", "r-1"), nullptr) << "a retry would find a job never stored";
  // Nothing in memory moved, so there is nothing to stop for.
  EXPECT_THAT(fail_stops_, IsEmpty());
}

TEST_F(JobBookTest, ReindexMovesAJobBetweenPendingAndActiveAndOutOfBothWhenItEnds) {
  Job& job = Created();
  for (JobState state : {JobState::kStarting, JobState::kRunning, JobState::kStopping}) {
    job.state = state;
    book_.Reindex(job);
    EXPECT_THAT(book_.pending(), IsEmpty()) << JobStateName(state);
    EXPECT_TRUE(book_.IsActive(job.id)) << JobStateName(state);
  }
  job.state = JobState::kPending;  // requeued for its next attempt
  book_.Reindex(job);
  EXPECT_THAT(book_.pending(), ElementsAre(job.id));
  EXPECT_THAT(book_.active(), IsEmpty());
  for (JobState state : {JobState::kSucceeded, JobState::kFailed, JobState::kKilled}) {
    job.state = JobState::kRunning;
    book_.Reindex(job);
    job.state = state;
    book_.Reindex(job);
    EXPECT_THAT(book_.pending(), IsEmpty()) << JobStateName(state);
    EXPECT_THAT(book_.active(), IsEmpty()) << JobStateName(state);
  }
  EXPECT_NE(book_.Find(job.id), nullptr) << "an ended job is still known";
}

TEST_F(JobBookTest, PersistBumpsTheVersionWritesTheJobAndAnnouncesIt) {
  Job& job = Created();
  uint64_t version = job.version;
  Place(job);
  ASSERT_TRUE(book_.Persist(job, {book_.Event(job, "placed", "on a")}).ok());
  EXPECT_EQ(job.version, version + 1);
  auto stored = disk_.LoadJobs();
  ASSERT_TRUE(stored.ok());
  ASSERT_EQ(stored->size(), 1u);
  EXPECT_EQ((*stored)[0].state, JobState::kStarting);
  EXPECT_EQ((*stored)[0].version, version + 1);
  EXPECT_THAT(announced_.jobs, ElementsAre(job.id));
  EXPECT_EQ(book_.Events(job.id)->size(), 1u);
}

TEST_F(JobBookTest, AFailedWriteFailsStopAndLeavesTheHistoryUnchanged) {
  Job& job = Created();
  Place(job);
  End(job, JobState::kSucceeded);
  book_.NoteEnd(job);
  store_.FailNextWrites(1, {Call::kSaveJob});
  Status s = book_.Persist(job, {});
  EXPECT_EQ(s.code(), StatusCode::kInternal);
  ASSERT_EQ(fail_stops_.size(), 1u);
  EXPECT_THAT(fail_stops_[0].message(), HasSubstr("saving job 1"));
  EXPECT_EQ(book_.history().size(), 0u) << "the history learnt of an end the store does not have";
  EXPECT_THAT(announced_.jobs, IsEmpty());
}

TEST_F(JobBookTest, AnEndIsInTheHistoryAndTheStoreOnceWrittenAndDropsStaleEstimates) {
  // Two ends leave every key short of kMinSamples: no estimate, and that answer is cached.
  for (int i = 0; i < 2; ++i) {
    Job& job = Created();
    Place(job);
    End(job, JobState::kSucceeded);
    book_.NoteEnd(job);
    ASSERT_TRUE(book_.Persist(job, {}).ok());
  }
  Job& third = Created();
  EXPECT_EQ(book_.EstimateFor(third), std::nullopt);
  Place(third);
  End(third, JobState::kFailed);
  book_.NoteEnd(third);
  ASSERT_TRUE(book_.Persist(third, {}).ok());
  EXPECT_EQ(book_.history().size(), static_cast<size_t>(scheduler::RuntimeHistory::kLevels));
  EXPECT_EQ(disk_.LoadRuntimeHistory()->size(), book_.history().size());
  EXPECT_NE(book_.EstimateFor(third), std::nullopt) << "a stale cached estimate was kept";
}

TEST_F(JobBookTest, AJobKilledBeforeItsTasksStartedTeachesTheHistoryNothing) {
  Job& job = Created();
  job.state = JobState::kKilled;
  book_.Reindex(job);
  book_.NoteEnd(job);
  ASSERT_TRUE(book_.Persist(job, {}).ok());
  EXPECT_EQ(book_.history().size(), 0u);
}

TEST_F(JobBookTest, PersistWritesTheHoldsNotedSinceTheLastWriteWithTheirEnds) {
  Job& job = Created();
  Place(job);
  Timestamp placed = clock_.Now();
  for (const auto& t : job.tasks) book_.NoteHold(job, t);
  ASSERT_TRUE(book_.Persist(job, {}).ok());
  auto holds = Holds();
  ASSERT_EQ(holds.size(), 2u);
  EXPECT_EQ(holds[0].team, "vision");
  EXPECT_EQ(holds[0].start, placed);
  EXPECT_EQ(holds[0].end, std::nullopt);

  clock_.Advance(std::chrono::minutes(10));
  job.tasks[0].state = TaskState::kFailed;
  // The agent's clock says it ended before the master placed it: charge no time, not less.
  job.tasks[0].finished_at = placed - std::chrono::minutes(5);
  book_.NoteHold(job, job.tasks[0]);
  ASSERT_TRUE(book_.Persist(job, {}).ok());
  holds = Holds();
  ASSERT_EQ(holds.size(), 2u);
  EXPECT_EQ(holds[0].task, "worker/0");
  EXPECT_EQ(holds[0].end, placed);
  EXPECT_EQ(holds[1].end, std::nullopt);
}

TEST_F(JobBookTest, LoadIndexesJobsByStateAndReturnsTheHighestAssignedVersion) {
  Created();
  Job& running = Created();
  Place(running, 7);
  running.state = JobState::kRunning;
  running.tasks[0].held_since.reset();  // stored before tasks kept the start of their hold
  ASSERT_TRUE(book_.Persist(running, {}).ok());
  Job& ended = Created();
  Place(ended, 9);
  End(ended, JobState::kKilled);
  ASSERT_TRUE(book_.Persist(ended, {}).ok());

  Journal journal(store_, [this](const Status& s) { fail_stops_.push_back(s); });
  JobBook loaded(journal, clock_, scheduler::RuntimeHistory::kMaxKeys);
  auto version = loaded.Load();
  ASSERT_TRUE(version.ok()) << version.status().ToString();
  EXPECT_EQ(*version, 9u) << "an ended job's versions were handed out too";
  EXPECT_THAT(loaded.pending(), ElementsAre(1));
  EXPECT_THAT(loaded.active(), ElementsAre(2));
  EXPECT_EQ(loaded.size(), 3u);
  EXPECT_EQ(loaded.At(2).tasks[0].held_since, running.placed_at);
}

TEST_F(JobBookTest, ARequestIdIsFoundAfterLoadForItsUserOnly) {
  JobId id = Created("vision", "r-1").id;
  Journal journal(store_, [this](const Status& s) { fail_stops_.push_back(s); });
  JobBook loaded(journal, clock_, scheduler::RuntimeHistory::kMaxKeys);
  ASSERT_TRUE(loaded.Load().ok());
  const Job* found = loaded.FindRequest("ada", "r-1");
  ASSERT_NE(found, nullptr) << "a retry after a restart would submit the job twice";
  EXPECT_EQ(found->id, id);
  EXPECT_EQ(loaded.FindRequest("bob", "r-1"), nullptr);
  EXPECT_EQ(loaded.FindRequest("ada", "r-2"), nullptr);
}

TEST_F(JobBookTest, CheckTaskKnowsOnlyTheTasksOfTheJobsAttempts) {
  Job& job = Created();
  Place(job);
  EXPECT_TRUE(book_.CheckTask(TaskId{job.id, 1, "worker", 1}, "a").ok());
  for (const TaskId& bad : {TaskId{job.id, 0, "worker", 0}, TaskId{job.id, 2, "worker", 0},
                            TaskId{job.id, 1, "worker", 2}, TaskId{job.id, 1, "ps", 0},
                            TaskId{job.id, 1, "worker", -1}, TaskId{job.id + 1, 1, "worker", 0}}) {
    EXPECT_EQ(book_.CheckTask(bad, "a").code(), StatusCode::kNotFound) << bad.ToString();
  }
}

TEST_F(JobBookTest, ANodeShipsOnlyForTheTasksPlacedOnIt) {
  Job& job = Created();
  Place(job);  // both tasks on a
  job.tasks[1].node_id = "b";
  EXPECT_TRUE(book_.CheckTask(TaskId{job.id, 1, "worker", 0}, "a").ok());
  EXPECT_EQ(book_.CheckTask(TaskId{job.id, 1, "worker", 0}, "b").code(),
            StatusCode::kPermissionDenied);
  EXPECT_TRUE(book_.CheckTask(TaskId{job.id, 1, "worker", 1}, "b").ok());
  // Once the attempt has ended (and the job waits for its next), its record says where each task
  // ran: a late log of attempt 1 still comes from its own node only.
  AttemptSummary ended{1, job.placed_at, clock_.Now(), "failed", {}};
  for (const auto& t : job.tasks) ended.nodes[t.Name()] = t.node_id;
  RecordAttempt(job, ended);
  job.tasks.clear();
  job.state = JobState::kPending;
  book_.Reindex(job);
  EXPECT_TRUE(book_.CheckTask(TaskId{job.id, 1, "worker", 1}, "b").ok());
  EXPECT_EQ(book_.CheckTask(TaskId{job.id, 1, "worker", 1}, "a").code(),
            StatusCode::kPermissionDenied);
  // An attempt recorded before placements were kept says nothing: it is not refused.
  job.history.back().nodes.clear();
  EXPECT_TRUE(book_.CheckTask(TaskId{job.id, 1, "worker", 1}, "a").ok());
}

TEST_F(JobBookTest, LiveJobsOfCountsTheTeamsJobsThatHaveNotEnded) {
  Created("vision");
  Place(Created("vision"));
  End(Created("vision"), JobState::kSucceeded);
  Created("speech");
  EXPECT_EQ(book_.LiveJobsOf("vision"), 2);
  EXPECT_EQ(book_.LiveJobsOf("speech"), 1);
  EXPECT_EQ(book_.LiveJobsOf("nlp"), 0);
}

// What the queue caps count (JobLifecycle::Submit): PENDING jobs only, by user and by team, as
// jobs start, are requeued and end, and after a restart.
TEST_F(JobBookTest, PendingJobsAreCountedByUserAndByTeam) {
  Created("vision");
  Job& started = Created("vision");
  Created("speech");
  EXPECT_EQ(book_.PendingOfUser("ada"), 3);
  EXPECT_EQ(book_.PendingOfTeam("vision"), 2);
  Place(started);
  EXPECT_EQ(book_.PendingOfUser("ada"), 2);
  EXPECT_EQ(book_.PendingOfTeam("vision"), 1);
  EXPECT_EQ(book_.PendingOfTeam("speech"), 1);
  started.state = JobState::kPending;  // requeued
  book_.Reindex(started);
  book_.Reindex(started);  // again, as a job's every change is: counted once
  EXPECT_EQ(book_.PendingOfUser("ada"), 3);
  EXPECT_EQ(book_.PendingOfTeam("vision"), 2);
  ASSERT_TRUE(book_.Persist(started, {}).ok());
  Place(started);
  End(started, JobState::kFailed);
  ASSERT_TRUE(book_.Persist(started, {}).ok());
  EXPECT_EQ(book_.PendingOfTeam("vision"), 1);
  EXPECT_EQ(book_.PendingOfUser("bob"), 0);
  EXPECT_EQ(book_.PendingOfTeam("nlp"), 0);

  Journal journal(store_, [this](const Status& s) { fail_stops_.push_back(s); });
  JobBook loaded(journal, clock_, scheduler::RuntimeHistory::kMaxKeys);
  ASSERT_TRUE(loaded.Load().ok());
  EXPECT_EQ(loaded.PendingOfUser("ada"), 2);
  EXPECT_EQ(loaded.PendingOfTeam("vision"), 1);
  EXPECT_EQ(loaded.PendingOfTeam("speech"), 1);
}

}  // namespace
}  // namespace cohort::master
