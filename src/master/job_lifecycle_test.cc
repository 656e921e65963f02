// The job lifecycle alone: the master's parts wired as master.cc wires them over an in-memory
// store (master_parts_test_fixture.h), driven through JobLifecycle's own calls.
#include "master/job_lifecycle.h"

#include <fmt/format.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <vector>

#include "master/master_parts_test_fixture.h"
#include "model/json.h"
#include "model/limits.h"

namespace cohort::master {
namespace {

using std::chrono::minutes;
using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::IsEmpty;
using ::testing::StartsWith;

using JobLifecycleTest = MasterPartsTest;

// Every task of the job has ended (as agents would report).
void EndEveryTask(Job& job, TaskState state) {
  for (auto& t : job.tasks) t.state = state;
}

TEST_F(JobLifecycleTest, SubmitRefusesAnUnknownTeamNamingTheField) {
  auto job = parts_->lifecycle.Submit(GangSpec(1, 1, 1, "nope"), "ada", {}, nullptr);
  ASSERT_FALSE(job.ok());
  EXPECT_EQ(job.status().code(), StatusCode::kInvalidArgument);
  ASSERT_EQ(job.status().details().size(), 1u);
  EXPECT_THAT(job.status().details()[0], StartsWith("team: \"nope\""));
  EXPECT_EQ(parts_->jobs.size(), 0u);
  EXPECT_EQ(loop_->posts(), 0) << "nothing arrived";
}

TEST_F(JobLifecycleTest, SubmitWithAnUnknownTeamFallbackMovesTheJobAndSaysSo) {
  MasterConfig config;
  config.unknown_team_fallback = kDefaultTeam;
  Wire(config);
  JobId id = Submit(GangSpec(1, 1, 1, "nope"));
  ASSERT_NE(id, 0);
  EXPECT_EQ(job(id).spec.team, kDefaultTeam);
  EXPECT_EQ(job(id).state, JobState::kPending);
  EXPECT_EQ(parts_->jobs.pending().count(id), 1u);
  auto events = parts_->jobs.Events(id);
  ASSERT_TRUE(events.ok());
  ASSERT_EQ(events->size(), 1u);
  EXPECT_EQ((*events)[0].type, "submitted");
  EXPECT_THAT((*events)[0].message, HasSubstr("team nope does not exist: moved to team default"));
  EXPECT_EQ(loop_->posts(), 1) << "its arrival asks for a pass";
}

TEST_F(JobLifecycleTest, ARetriedRequestIdReturnsTheFirstJobAndAnotherSpecIsAlreadyExists) {
  bool replayed = true;
  auto first = parts_->lifecycle.Submit(GangSpec(1, 1), "ada", "req-1", &replayed);
  ASSERT_TRUE(first.ok()) << first.status().ToString();
  EXPECT_FALSE(replayed);

  auto retry = parts_->lifecycle.Submit(GangSpec(1, 1), "ada", "req-1", &replayed);
  ASSERT_TRUE(retry.ok()) << retry.status().ToString();
  EXPECT_TRUE(replayed);
  EXPECT_EQ(retry->id, first->id);
  EXPECT_EQ(parts_->jobs.size(), 1u);

  auto other = parts_->lifecycle.Submit(GangSpec(2, 1), "ada", "req-1", &replayed);
  ASSERT_FALSE(other.ok());
  EXPECT_EQ(other.status().code(), StatusCode::kAlreadyExists);
  EXPECT_EQ(parts_->jobs.size(), 1u);

  auto someone_else = parts_->lifecycle.Submit(GangSpec(1, 1), "bob", "req-1", &replayed);
  ASSERT_TRUE(someone_else.ok());
  EXPECT_FALSE(replayed) << "request ids are per user";
  EXPECT_NE(someone_else->id, first->id);
}

// Nobody's queue grows the master without end: a user, and a team, may have so many jobs waiting.
TEST_F(JobLifecycleTest, ASubmissionBeyondAQueueCapIsRefusedNamingTheCap) {
  MasterConfig config;
  config.max_queued_per_user = 2;
  config.max_queued_per_team = 3;
  Wire(config);
  JobId first = parts_->lifecycle.Submit(GangSpec(1, 1), "ada", "r-1", nullptr)->id;
  Submit(GangSpec(1, 1), "ada");
  auto refused = parts_->lifecycle.Submit(GangSpec(1, 1), "ada", {}, nullptr);
  ASSERT_FALSE(refused.ok());
  EXPECT_EQ(refused.status().code(), StatusCode::kTooManyRequests);
  EXPECT_EQ(refused.status().message(),
            "ada has 2 jobs waiting to start, the most one user may have queued (cohortd master "
            "--max-queued-per-user 2); wait until some of them start, or kill some (cohort jobs "
            "--state pending), or ask an admin to raise it");
  EXPECT_EQ(parts_->jobs.size(), 2u);
  // A retry of a submission that was taken is no new job: it is answered as before.
  bool replayed = false;
  auto retry = parts_->lifecycle.Submit(GangSpec(1, 1), "ada", "r-1", &replayed);
  ASSERT_TRUE(retry.ok()) << retry.status().ToString();
  EXPECT_TRUE(replayed);
  EXPECT_EQ(retry->id, first);
  // The team's cap counts every member's.
  Submit(GangSpec(1, 1), "bob");
  auto team_full = parts_->lifecycle.Submit(GangSpec(1, 1), "bob", {}, nullptr);
  ASSERT_FALSE(team_full.ok());
  EXPECT_EQ(team_full.status().code(), StatusCode::kTooManyRequests);
  EXPECT_THAT(team_full.status().message(),
              StartsWith("team default has 3 jobs waiting to start, the most one team may have "
                         "queued (cohortd master --max-queued-per-team 3)"));
  // A job that starts, or is killed, is no longer queued.
  ASSERT_TRUE(parts_->lifecycle.Kill(first, "user ada").ok());
  EXPECT_NE(Submit(GangSpec(1, 1), "ada"), 0);
  AddNode("a", 8);
  loop_->RunPosted();
  EXPECT_EQ(parts_->jobs.pending().size(), 0u);
  EXPECT_NE(Submit(GangSpec(1, 1), "ada"), 0);
  EXPECT_NE(Submit(GangSpec(1, 1), "ada"), 0);
}

TEST_F(JobLifecycleTest, KillOfAPendingJobEndsItAtOnceAndOfAnEndedJobIsFailedPrecondition) {
  JobId id = Submit(GangSpec(1, 1));
  auto killed = parts_->lifecycle.Kill(id, "user bob");
  ASSERT_TRUE(killed.ok()) << killed.status().ToString();
  EXPECT_EQ((*killed)->state, JobState::kKilled);
  EXPECT_EQ((*killed)->message, "killed while pending by user bob");
  auto events = parts_->jobs.Events(id);
  ASSERT_TRUE(events.ok());
  EXPECT_EQ(events->back().message, "killed while pending by user bob");
  EXPECT_TRUE((*killed)->finished_at.has_value());
  EXPECT_EQ(parts_->jobs.pending().count(id), 0u);
  EXPECT_FALSE(parts_->jobs.IsActive(id));
  auto stored = parts_->store->LoadJobs();
  ASSERT_TRUE(stored.ok());
  ASSERT_EQ(stored->size(), 1u);
  EXPECT_EQ((*stored)[0].state, JobState::kKilled) << "durable when Kill returns";

  auto again = parts_->lifecycle.Kill(id, "user ada");
  EXPECT_EQ(again.status().code(), StatusCode::kFailedPrecondition);
  EXPECT_EQ(parts_->lifecycle.Kill(id + 1, "user ada").status().code(), StatusCode::kNotFound);
}

TEST_F(JobLifecycleTest, KillOfAStartedJobAsksEveryTaskToStopAndEndsItOnceTheyAreGone) {
  AddNode("a", 2);
  JobId id = Started(GangSpec(2, 1));
  uint64_t node_version = parts_->nodes.At("a").version;

  auto killed = parts_->lifecycle.Kill(id, "user bob");
  ASSERT_TRUE(killed.ok());
  EXPECT_EQ(job(id).state, JobState::kStopping);
  EXPECT_EQ(job(id).message, "killed by user bob");
  EXPECT_EQ(job(id).stop_target, JobState::kKilled);
  for (const auto& t : job(id).tasks) EXPECT_TRUE(t.stop_requested) << t.Name();
  EXPECT_GT(parts_->nodes.At("a").version, node_version) << "the agent is told to stop them";
  EXPECT_TRUE(parts_->jobs.IsActive(id)) << "it holds its GPUs until the agent confirms";

  EndEveryTask(job(id), TaskState::kKilled);
  std::vector<JobEvent> events;
  parts_->lifecycle.FinishIfStopped(job(id), events);
  EXPECT_EQ(job(id).state, JobState::kKilled);
  EXPECT_FALSE(parts_->jobs.IsActive(id));
  EXPECT_FALSE(parts_->scheduling.cluster().Holds(id));
}

TEST_F(JobLifecycleTest, StartAssignsPortsFromTheNodesRangeAndBumpsItsVersion) {
  AddNode("a", 4, PortRange{32000, 32001});
  JobId id = Submit(GangSpec(2, 1));
  uint64_t before = parts_->nodes.At("a").version;

  Status s = parts_->lifecycle.Start(job(id), JobPlacement{id, {{"a", {0}}, {"a", {1}}}});
  ASSERT_TRUE(s.ok()) << s.ToString();
  const Job& started = job(id);
  EXPECT_EQ(started.state, JobState::kStarting);
  EXPECT_EQ(started.attempt, 1);
  EXPECT_TRUE(parts_->jobs.IsActive(id));
  EXPECT_EQ(parts_->jobs.pending().count(id), 0u);
  ASSERT_EQ(started.tasks.size(), 2u);
  std::vector<int> ports = {started.tasks[0].port, started.tasks[1].port};
  std::sort(ports.begin(), ports.end());
  EXPECT_THAT(ports, ElementsAre(32000, 32001));
  EXPECT_EQ(started.tasks[1].gpus, std::vector<int>{1});
  EXPECT_EQ(started.tasks[0].host, parts_->nodes.At("a").node.info.address);
  uint64_t after = parts_->nodes.At("a").version;
  EXPECT_GT(after, before);
  for (const auto& t : started.tasks) EXPECT_EQ(t.assigned_version, after) << t.Name();

  // Every port of the range is taken: the next job does not start, and is left as it was.
  JobId next = Submit(GangSpec(1, 1));
  Status none = parts_->lifecycle.Start(job(next), JobPlacement{next, {{"a", {2}}}});
  EXPECT_EQ(none.code(), StatusCode::kUnavailable);
  EXPECT_EQ(job(next).state, JobState::kPending);
  EXPECT_EQ(job(next).attempt, 0);
  EXPECT_THAT(job(next).tasks, IsEmpty());
}

// The parser cannot see secrets' values; the master counts them in a job's tasks' text.
TEST_F(JobLifecycleTest, SubmitCountsTheValuesOfSecretsInAJobsTasksText) {
  ASSERT_TRUE(
      parts_->secrets.Set(SecretScope::kUser, "ada", "big", std::string(64 * 1024, 's')).ok());
  JobSpec spec = GangSpec(1024, 0);
  spec.tasks[0].env_secrets = {{"A", "big"}, {"B", "big"}};
  auto refused = parts_->lifecycle.Submit(spec, "ada", {}, nullptr);
  ASSERT_FALSE(refused.ok());
  EXPECT_EQ(refused.status().code(), StatusCode::kInvalidArgument);
  EXPECT_THAT(refused.status().details(),
              ElementsAre("tasks[0]: 1024 replicas × 128Ki of command, env and workdir each is "
                          "128Mi, over the 16Mi limit of a job's tasks' text (docs/job-spec.md, "
                          "\"Limits\")"));
  EXPECT_EQ(parts_->jobs.size(), 0u);
  spec.tasks[0].replicas = 120;
  EXPECT_NE(Submit(spec), 0);
}

// A node's desired state (the answer to each of its syncs) carries each task's command, env and
// workdir: jobs within their own bound could still pile it up past what its agent can take.
TEST_F(JobLifecycleTest, APlacementThatWouldOverfillANodesDesiredStateWaitsAndSaysWhy) {
  AddNode("a", 0, PortRange{31000, 31999});
  // 62 tasks of 248 KiB of env each: 15 MiB, within a job's bound; with Cohort's variables and
  // the store's access (kLaunchStoreAccessBytes), two such jobs fit a node and three do not.
  JobSpec spec = GangSpec(62, 0);
  spec.tasks[0].resources = Resources{0, 100, 1LL << 20};
  for (int i = 0; i < 8; ++i)
    spec.tasks[0].env[fmt::format("V{}", i)] = std::string(31 * 1024 - 2, 'v');
  JobId first = Started(spec);
  JobId second = Started(spec);
  JobId third = Submit(spec);
  loop_->RunPosted();
  EXPECT_EQ(job(third).state, JobState::kPending);
  EXPECT_THAT(job(third).tasks, IsEmpty());
  EXPECT_EQ(job(third).message,
            "not started: 62 tasks on node a would bring its desired state to 46.6Mi (each task's "
            "command, env and workdir, with Cohort's variables; 31.1Mi of it there already), over "
            "the 32Mi limit of one node's (docs/job-spec.md, \"Limits\"); the job waits");
  // The bound holds for what is sent: the desired state as JSON.
  auto desired = parts_->reconciler.DesiredFor("a");
  ASSERT_TRUE(desired.ok());
  EXPECT_EQ(desired->tasks.size(), 124u);
  size_t sent = ToJson(*desired).dump().size();
  EXPECT_GT(sent, size_t{29} << 20);
  EXPECT_LE(sent, static_cast<size_t>(kMaxNodeTaskTextBytes));
  // Once the first ends, the third starts.
  auto killed = parts_->lifecycle.Kill(first, "user ada");
  ASSERT_TRUE(killed.ok());
  AgentReport report = ReportOf("a", TaskState::kRunning);  // the second's tasks
  for (const auto& t : job(first).tasks) {
    report.tasks.push_back(TaskReport{job(first).IdOf(t), TaskState::kKilled, std::nullopt, 15, 100,
                                      clock_.Now(), clock_.Now()});
  }
  ASSERT_TRUE(parts_->reconciler.Sync("a", report).ok());
  loop_->RunPosted();
  EXPECT_EQ(job(first).state, JobState::kKilled);
  EXPECT_EQ(job(third).state, JobState::kStarting) << job(third).message;
  EXPECT_EQ(job(second).state, JobState::kRunning);
}

TEST_F(JobLifecycleTest, StopThenFinishIfStoppedRequeuesOnceEveryTaskIsTerminal) {
  AddNode("a", 2);
  JobId id = Started(GangSpec(2, 1));
  std::vector<JobEvent> events;
  parts_->lifecycle.Stop(job(id), JobState::kPending, "the test stops it", events);
  EXPECT_EQ(job(id).state, JobState::kStopping);
  EXPECT_EQ(job(id).stop_target, JobState::kPending);

  parts_->lifecycle.FinishIfStopped(job(id), events);
  EXPECT_EQ(job(id).state, JobState::kStopping) << "its tasks still run";

  job(id).tasks[0].state = TaskState::kKilled;
  parts_->lifecycle.FinishIfStopped(job(id), events);
  EXPECT_EQ(job(id).state, JobState::kStopping) << "one task still runs";

  job(id).tasks[1].state = TaskState::kKilled;
  parts_->lifecycle.FinishIfStopped(job(id), events);
  const Job& requeued = job(id);
  EXPECT_EQ(requeued.state, JobState::kPending);
  EXPECT_THAT(requeued.tasks, IsEmpty());
  EXPECT_FALSE(requeued.placed_at.has_value());
  EXPECT_FALSE(requeued.stop_target.has_value());
  EXPECT_EQ(parts_->jobs.pending().count(id), 1u);
  EXPECT_FALSE(parts_->jobs.IsActive(id));
  ASSERT_EQ(requeued.history.size(), 1u);
  EXPECT_EQ(requeued.history[0].number, 1);
  EXPECT_EQ(requeued.history[0].result, "failed: the test stops it");
  ASSERT_FALSE(events.empty());
  EXPECT_EQ(events.back().type, "requeued");
}

TEST_F(JobLifecycleTest, StopToAnEndStateRecordsTheAttemptAndReleasesTheJob) {
  AddNode("a", 2);
  JobId id = Started(GangSpec(1, 2));
  ASSERT_TRUE(parts_->scheduling.cluster().Holds(id));
  std::vector<JobEvent> events;
  parts_->lifecycle.Stop(job(id), JobState::kSucceeded, "every worker succeeded", events);
  EndEveryTask(job(id), TaskState::kSucceeded);
  parts_->lifecycle.FinishIfStopped(job(id), events);

  const Job& ended = job(id);
  EXPECT_EQ(ended.state, JobState::kSucceeded);
  EXPECT_TRUE(ended.finished_at.has_value());
  ASSERT_EQ(ended.history.size(), 1u);
  EXPECT_EQ(ended.history[0].result, "every worker succeeded");
  EXPECT_EQ(ended.history[0].finished_at, clock_.Now());
  EXPECT_FALSE(parts_->jobs.IsActive(id));
  EXPECT_FALSE(parts_->scheduling.cluster().Holds(id));
  EXPECT_EQ(parts_->scheduling.cluster().FindNode("a")->free.gpus, 2);
  ASSERT_FALSE(events.empty());
  EXPECT_EQ(events.back().type, "finished");
}

TEST_F(JobLifecycleTest, EndAttemptEarlyRequeuesWithinTheRestartBudgetAndFailsPastIt) {
  AddNode("a", 2);
  JobSpec spec = GangSpec(1, 1, /*max_attempts=*/2);
  spec.restart.backoff = minutes(1);
  spec.restart.max_backoff = minutes(10);
  JobId id = Started(spec);

  std::vector<JobEvent> events;
  parts_->lifecycle.EndAttemptEarly(job(id), RestartCause::kFailure, "worker/0 exited", events);
  EXPECT_EQ(job(id).failures, 1);
  EXPECT_EQ(job(id).stop_target, JobState::kPending);
  EXPECT_EQ(job(id).not_before, clock_.Now() + minutes(1));
  EndEveryTask(job(id), TaskState::kFailed);
  parts_->lifecycle.FinishIfStopped(job(id), events);
  EXPECT_EQ(job(id).state, JobState::kPending);
  EXPECT_THAT(job(id).message, HasSubstr("restart backoff"));

  // Not before its backoff is over.
  loop_->RunPosted();
  EXPECT_EQ(job(id).state, JobState::kPending);
  clock_.Advance(minutes(2));
  parts_->scheduling.OnTick(clock_.Now());
  loop_->RunPosted();
  ASSERT_EQ(job(id).state, JobState::kStarting);
  EXPECT_EQ(job(id).attempt, 2);

  parts_->lifecycle.EndAttemptEarly(job(id), RestartCause::kFailure, "worker/0 exited", events);
  EXPECT_EQ(job(id).failures, 2);
  EXPECT_EQ(job(id).stop_target, JobState::kFailed) << "the budget of 2 attempts is spent";
  EndEveryTask(job(id), TaskState::kFailed);
  parts_->lifecycle.FinishIfStopped(job(id), events);
  EXPECT_EQ(job(id).state, JobState::kFailed);
}

TEST_F(JobLifecycleTest, StopOverdueStopsOnlyAJobPastItsMaxRuntime) {
  AddNode("a", 2);
  JobSpec spec = GangSpec(1, 1);
  spec.max_runtime = minutes(60);
  JobId id = Started(spec);
  JobId unbounded = Started(GangSpec(1, 1));

  clock_.Advance(minutes(60));
  parts_->lifecycle.StopOverdue(clock_.Now());
  EXPECT_EQ(job(id).state, JobState::kStarting) << "exactly its max_runtime is not past it";

  clock_.Advance(minutes(1));
  parts_->lifecycle.StopOverdue(clock_.Now());
  EXPECT_EQ(job(id).state, JobState::kStopping);
  EXPECT_EQ(job(id).stop_target, JobState::kFailed);
  EXPECT_THAT(job(id).message, HasSubstr("max_runtime"));
  EXPECT_EQ(job(unbounded).state, JobState::kStarting);
  auto stored = parts_->store->LoadJobs();
  ASSERT_TRUE(stored.ok());
  EXPECT_EQ((*stored)[0].state, JobState::kStopping) << "written";
}

TEST_F(JobLifecycleTest, PreemptRequeuesByDefaultAndFailsAJobWhosePolicyExcludesIt) {
  AddNode("a", 2);
  JobId requeues = Started(GangSpec(1, 1));
  JobSpec spec = GangSpec(1, 1);
  spec.restart.on = {RestartCause::kFailure, RestartCause::kNodeLost};
  JobId fails = Started(spec);

  parts_->lifecycle.Preempt(Preemption{requeues, 99, "preempted by job 99", {}});
  EXPECT_EQ(job(requeues).state, JobState::kStopping);
  EXPECT_EQ(job(requeues).stop_target, JobState::kPending);
  EXPECT_EQ(job(requeues).preemptions, 1);
  EXPECT_EQ(job(requeues).failures, 0) << "a preemption spends no restart budget";

  parts_->lifecycle.Preempt(Preemption{fails, 99, "preempted by job 99", {}});
  EXPECT_EQ(job(fails).state, JobState::kStopping);
  EXPECT_EQ(job(fails).stop_target, JobState::kFailed);
  EXPECT_THAT(job(fails).message, HasSubstr("restart.on does not include preempted"));
  auto events = parts_->jobs.Events(fails);
  ASSERT_TRUE(events.ok());
  ASSERT_FALSE(events->empty());
  EXPECT_EQ(events->back().type, "preempted");
}

}  // namespace
}  // namespace cohort::master
