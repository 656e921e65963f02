// The master's job lifecycle against a real SQLite file, a manual clock and hand-written agent
// reports: placement, the reconciliation protocol, gang failure and retry, kill, restart.
#include "master/master.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <filesystem>

#include "master/master_test_fixture.h"

namespace cohort::master {
namespace {

namespace fs = std::filesystem;
using ::testing::HasSubstr;
using ::testing::Not;

TEST_P(MasterTest, SubmittedGangIsPlacedAndRuns) {
  AddNode("a", 4);
  JobId id = Submit(2, 2);
  EXPECT_EQ(GetJob(id).state, JobState::kPending);
  RunPosted();
  const Job& job = GetJob(id);
  ASSERT_EQ(job.state, JobState::kStarting);
  EXPECT_EQ(job.attempt, 1);
  ASSERT_EQ(job.tasks.size(), 2u);

  auto desired = master_->nodes().DesiredFor("a");
  ASSERT_TRUE(desired.ok());
  ASSERT_EQ(desired->tasks.size(), 2u);
  const TaskLaunch& t1 = desired->tasks[1];
  EXPECT_EQ(t1.id.ToString(), std::to_string(id) + ".1.worker.1");
  EXPECT_EQ(t1.env.at("RANK"), "1");
  EXPECT_EQ(t1.env.at("WORLD_SIZE"), "2");
  EXPECT_EQ(t1.env.at("CUDA_VISIBLE_DEVICES"), "2,3");
  EXPECT_EQ(t1.env.at("MASTER_PORT"), std::to_string(job.tasks[0].port));
  EXPECT_NE(job.tasks[0].port, job.tasks[1].port);

  Report("a", TaskState::kRunning);
  EXPECT_EQ(GetJob(id).state, JobState::kRunning);
  ASSERT_TRUE(GetJob(id).running_at.has_value());

  auto next = Report("a", TaskState::kSucceeded, 0);
  EXPECT_EQ(GetJob(id).state, JobState::kSucceeded);
  EXPECT_TRUE(next.tasks.empty());
  EXPECT_EQ(next.forget.size(), 2u);  // recorded: the agent may drop them
  auto nodes = master_->nodes().List();
  EXPECT_TRUE(nodes.at(0).gpu_holders.empty());
}

TEST_P(MasterTest, ReplicasOfAGroupWithDistinctNodesAreEachPlacedOnANodeOfTheirOwn) {
  AddNode("a", 8);
  AddNode("b", 8);
  JobSpec apart = MakeSpec(2, 1);
  apart.tasks[0].distinct_nodes = true;
  auto job = master_->Submit(apart, "ada");
  ASSERT_TRUE(job.ok()) << job.status().ToString();
  JobId packed = Submit(2, 1);  // the same gang without the rule: on one node
  RunPosted();
  const Job& placed = GetJob(job->id);
  ASSERT_EQ(placed.state, JobState::kStarting) << placed.message;
  ASSERT_EQ(placed.tasks.size(), 2u);
  EXPECT_NE(placed.tasks[0].node_id, placed.tasks[1].node_id);
  ASSERT_EQ(GetJob(packed).tasks.size(), 2u);
  EXPECT_EQ(GetJob(packed).tasks[0].node_id, GetJob(packed).tasks[1].node_id);

  Start();  // a new master on the same data directory: the spec keeps the rule
  EXPECT_TRUE(GetJob(job->id).spec.tasks[0].distinct_nodes);
  EXPECT_FALSE(GetJob(packed).spec.tasks[0].distinct_nodes);
}

TEST_P(MasterTest, PendingGangHoldsNothingAndStartsWhenANodeJoins) {
  AddNode("a", 2);
  JobId big = Submit(2, 2);  // 4 GPUs: does not fit on a
  RunPosted();
  EXPECT_EQ(GetJob(big).state, JobState::kPending);
  EXPECT_THAT(GetJob(big).message, HasSubstr("unschedulable"));
  EXPECT_TRUE(master_->nodes().List().at(0).gpu_holders.empty());
  JobId small = Submit(1, 1);
  RunPosted();
  EXPECT_EQ(GetJob(small).state, JobState::kStarting);
  AddNode("b", 4);
  RunPosted();
  EXPECT_EQ(GetJob(big).state, JobState::kStarting);
  for (const auto& t : GetJob(big).tasks) EXPECT_EQ(t.node_id, "b");
}

// Found by fuzz/api_fuzzer.cc: the scheduler does not count ports, so it placed a job on a node
// whose port range was used up; the placement failed, the master asked for a pass at once, and
// that pass chose the same placement again: the event loop never ran dry.
TEST_P(MasterTest, APlacementWithoutAFreePortWaitsForTheTickInsteadOfLooping) {
  NodeInfo info;
  info.id = "a";
  info.address = "127.0.0.1";
  info.milli_cpus = 32000;
  info.memory_bytes = 128LL << 30;
  for (int i = 0; i < 4; ++i)
    info.gpus.push_back(Gpu{i, "GPU-" + std::to_string(i), "H100", 0, "", 0});
  info.ports = PortRange{31000, 31001};  // two tasks at most
  ASSERT_TRUE(master_->nodes().Register(info).ok());
  JobId first = Submit(2, 1);
  JobId second = Submit(2, 1);
  int ran = 0;
  for (int round = 0; round < 3; ++round) {
    while (!posted_.empty() && ran < 100) {
      auto f = posted_.front();
      posted_.pop_front();
      f();
      ++ran;
    }
    master_->Tick();
  }
  EXPECT_LT(ran, 100) << "the master keeps posting passes";
  EXPECT_EQ(GetJob(first).state, JobState::kStarting);
  EXPECT_EQ(GetJob(second).state, JobState::kPending);
  // Once the first job's tasks are gone, their ports are free and the second job starts.
  Report("a", TaskState::kSucceeded, 0);
  RunPosted();
  EXPECT_EQ(GetJob(first).state, JobState::kSucceeded);
  EXPECT_EQ(GetJob(second).state, JobState::kStarting);
}

TEST_P(MasterTest, FailedTaskStopsTheGangAndRetriesWithinBudget) {
  AddNode("a", 4);
  JobId id = Submit(2, 1, /*max_attempts=*/2);
  RunPosted();
  Report("a", TaskState::kRunning);
  // worker/1 fails: worker/0 must be stopped, then the job is requeued as attempt 2.
  TaskId key1{id, 1, "worker", 1};
  TaskId key0{id, 1, "worker", 0};
  AgentReport report;
  report.applied_version = master_->nodes().DesiredFor("a")->version;
  report.tasks = {TaskReport{key0, TaskState::kRunning, {}, {}, 10, {}, {}},
                  TaskReport{key1, TaskState::kFailed, 3, {}, 11, {}, {}}};
  auto desired = master_->nodes().Sync("a", report);
  ASSERT_TRUE(desired.ok());
  EXPECT_EQ(GetJob(id).state, JobState::kStopping);
  EXPECT_TRUE(desired->tasks.empty()) << "worker/0 must no longer be wanted";
  EXPECT_THAT(GetJob(id).message, HasSubstr("worker/1 exited with code 3"));

  report.applied_version = desired->version;
  report.tasks = {TaskReport{key0, TaskState::kKilled, {}, 15, 10, {}, {}}};
  ASSERT_TRUE(master_->nodes().Sync("a", report).ok());
  EXPECT_EQ(GetJob(id).state, JobState::kPending);
  RunPosted();
  EXPECT_EQ(GetJob(id).state, JobState::kStarting);
  EXPECT_EQ(GetJob(id).attempt, 2);
  ASSERT_EQ(GetJob(id).history.size(), 1u);

  // A second failure exhausts the budget.
  Report("a", TaskState::kFailed, 1);
  EXPECT_EQ(GetJob(id).state, JobState::kFailed);
}

TEST_P(MasterTest, KillStopsTasksAndFreesGpusOnlyWhenConfirmed) {
  AddNode("a", 4);
  JobId id = Submit(2, 2);
  RunPosted();
  Report("a", TaskState::kRunning);
  ASSERT_TRUE(master_->Kill(id, "user ada").ok());
  EXPECT_EQ(GetJob(id).state, JobState::kStopping);
  EXPECT_EQ(master_->nodes().List().at(0).gpu_holders.size(), 4u);  // not yet confirmed
  EXPECT_TRUE(master_->nodes().DesiredFor("a")->tasks.empty());
  // The agent confirms both tasks were killed.
  AgentReport report;
  report.applied_version = master_->nodes().DesiredFor("a")->version;
  for (int i = 0; i < 2; ++i) {
    report.tasks.push_back(
        TaskReport{TaskId{id, 1, "worker", i}, TaskState::kKilled, {}, 15, 0, {}, {}});
  }
  ASSERT_TRUE(master_->nodes().Sync("a", report).ok());
  EXPECT_EQ(GetJob(id).state, JobState::kKilled);
  EXPECT_TRUE(master_->nodes().List().at(0).gpu_holders.empty());
  auto again = master_->Kill(id, "user ada");
  EXPECT_EQ(again.status().code(), StatusCode::kFailedPrecondition);
  EXPECT_EQ(master_->Kill(9999, "user ada").status().code(), StatusCode::kNotFound);
}

TEST_P(MasterTest, TaskMissingFromAnAppliedReportIsLost) {
  AddNode("a", 1);
  JobId id = Submit(1, 1);
  RunPosted();
  Report("a", TaskState::kRunning);
  AgentReport empty;
  empty.applied_version = master_->nodes().DesiredFor("a")->version;
  ASSERT_TRUE(master_->nodes().Sync("a", empty).ok());
  EXPECT_EQ(GetJob(id).state, JobState::kFailed);
  EXPECT_EQ(GetJob(id).tasks[0].state, TaskState::kLost);
}

TEST_P(MasterTest, ReportBeforeApplyingDoesNotLoseNewTasks) {
  AddNode("a", 1);
  JobId id = Submit(1, 1);
  RunPosted();
  AgentReport stale;  // applied_version 0: the agent has not seen the placement yet
  ASSERT_TRUE(master_->nodes().Sync("a", stale).ok());
  EXPECT_EQ(GetJob(id).state, JobState::kStarting);
}

TEST_P(MasterTest, JobsSurviveRestart) {
  AddNode("a", 4);
  JobId running = Submit(1, 1);
  RunPosted();
  Report("a", TaskState::kRunning);
  JobId pending = Submit(1, 8);
  RunPosted();
  Start();  // a new master on the same data directory
  EXPECT_EQ(GetJob(running).state, JobState::kRunning);
  EXPECT_EQ(GetJob(running).tasks.at(0).node_id, "a");
  EXPECT_EQ(GetJob(pending).state, JobState::kPending);
  auto events = master_->Events(running);
  ASSERT_TRUE(events.ok());
  EXPECT_GE(events->size(), 3u);  // submitted, placed, running
  // The node comes back with a sync; its task keeps running, and versions keep rising.
  auto nodes = master_->nodes().List();
  ASSERT_EQ(nodes.size(), 1u);
  EXPECT_EQ(nodes[0].node->state, NodeState::kUnreachable);
  Report("a", TaskState::kRunning);
  EXPECT_EQ(GetJob(running).state, JobState::kRunning);
}

TEST_P(MasterTest, MaxRuntimeStopsTheJob) {
  AddNode("a", 1);
  JobSpec spec;
  spec.name = "slow";
  spec.max_runtime = std::chrono::minutes(5);
  TaskGroupSpec g;
  g.role = "main";
  g.command = {"sleep", "infinity"};
  g.resources = Resources{0, 1000, 1LL << 30};
  spec.tasks.push_back(g);
  JobId id = master_->Submit(spec, "ada")->id;
  RunPosted();
  Report("a", TaskState::kRunning);
  clock_.Advance(std::chrono::minutes(6));
  Report("a", TaskState::kRunning);  // keep the node alive
  master_->Tick();
  EXPECT_EQ(GetJob(id).state, JobState::kStopping);
  EXPECT_THAT(GetJob(id).message, HasSubstr("max_runtime of 5m"));
  Report("a", TaskState::kRunning);  // desired is now empty, so nothing is reported...
}

TEST_P(MasterTest, LogsAreAppendedIdempotently) {
  AddNode("a", 1);
  JobId id = Submit(1, 1);
  RunPosted();
  TaskId key{id, 1, "worker", 0};
  EXPECT_EQ(*master_->AppendLog("a", key, 0, "hello\n"), 6);
  EXPECT_EQ(*master_->AppendLog("a", key, 0, "hello\nworld\n"), 12);  // resend overlaps
  auto gap = master_->AppendLog("a", key, 40, "x");
  EXPECT_EQ(gap.status().code(), StatusCode::kFailedPrecondition);
  EXPECT_EQ(master_->AppendLog("a", TaskId{999, 1, "worker", 0}, 0, "x").status().code(),
            StatusCode::kNotFound);
  // Ids name files: anything but one of the job's own tasks is refused.
  for (const TaskId& bad :
       std::vector<TaskId>{{id, 1, "chief", 0}, {id, 1, "worker", 7}, {id, 2, "worker", 0}}) {
    EXPECT_FALSE(master_->AppendLog("a", bad, 0, "x").ok()) << bad.ToString();
  }
  for (const std::string& text : std::vector<std::string>{
           std::to_string(id) + ".1./etc/passwd.0", std::to_string(id) + ".1.worker.x",
           "x.1.worker.0", "0.1.worker.0", "1.1.Worker.0", "1.1.worker.-1", "1.1.worker.0.0",
           "1.1..0", "1.1.worker. 0", ""}) {
    EXPECT_EQ(ParseTaskId(text).status().code(), StatusCode::kInvalidArgument) << text;
  }
  EXPECT_EQ(*ParseTaskId("12.3.ps-0.4"), (TaskId{12, 3, "ps-0", 4}));
  EXPECT_EQ(master_->logs().Read(key, 0, 100)->data, "hello\nworld\n");
}

TEST_P(MasterTest, TeamsAreDurableAndUnknownTeamsAreRefused) {
  JobSpec spec;
  spec.name = "x";
  spec.team = "vision";
  TaskGroupSpec g;
  g.role = "main";
  g.command = {"true"};
  g.resources = Resources{0, 1000, 1LL << 30};
  spec.tasks.push_back(g);
  auto refused = master_->Submit(spec, "ada");
  ASSERT_FALSE(refused.ok());
  EXPECT_EQ(refused.status().code(), StatusCode::kInvalidArgument);
  ASSERT_EQ(refused.status().details().size(), 1u);
  EXPECT_THAT(refused.status().details()[0],
              HasSubstr("team: \"vision\" is not a team; an admin creates it with: cohort team "
                        "set vision --gpus N"));

  EXPECT_FALSE(master_->teams().Set(TeamQuota{"bad name", 1, std::nullopt}).ok());
  EXPECT_FALSE(master_->teams().Set(TeamQuota{"vision", 8, 4}).ok()) << "max below guarantee";
  EXPECT_FALSE(master_->teams().Set(TeamQuota{"vision", -1, std::nullopt}).ok());
  ASSERT_TRUE(master_->teams().Set(TeamQuota{"vision", 4, 6}).ok());
  auto job = master_->Submit(spec, "ada");
  ASSERT_TRUE(job.ok()) << job.status().ToString();

  Start();  // restart: the team is still there
  auto teams = master_->teams().List();
  ASSERT_EQ(teams.size(), 2u);
  EXPECT_EQ(teams[0].quota.name, "default");
  EXPECT_TRUE(teams[0].implicit);
  EXPECT_EQ(teams[1].quota.name, "vision");
  EXPECT_EQ(teams[1].quota.guaranteed_gpus, 4);
  EXPECT_EQ(teams[1].quota.max_gpus, 6);
  EXPECT_EQ(teams[1].pending_jobs, 1);
  EXPECT_EQ(master_->teams().Delete("vision").code(), StatusCode::kFailedPrecondition);
  ASSERT_TRUE(master_->Kill(job->id, "user ada").ok());
  EXPECT_TRUE(master_->teams().Delete("vision").ok());
  EXPECT_EQ(master_->teams().Delete("vision").code(), StatusCode::kNotFound);
}

TEST_P(MasterTest, PreemptedJobRequeuesKeepingItsPlaceAndDoesNotSpendItsRestartBudget) {
  AddNode("a", 2);
  JobId low = Submit(1, 2, 1, "default", kPriorityLow);
  RunPosted();
  Report("a", TaskState::kRunning);
  clock_.Advance(std::chrono::minutes(5));
  Report("a", TaskState::kRunning);  // the node stays in touch
  JobId high = Submit(1, 2, 1, "default", kPriorityHigh);
  RunPosted();
  EXPECT_EQ(GetJob(low).state, JobState::kStopping);
  EXPECT_EQ(GetJob(low).preempted_for, high);
  EXPECT_THAT(GetJob(high).message, HasSubstr("preempting job 1"));
  // The victim's agent confirms it stopped; the high job starts, the low one waits.
  Report("a", TaskState::kKilled);
  RunPosted();
  EXPECT_EQ(GetJob(high).state, JobState::kStarting);
  const Job& requeued = GetJob(low);
  EXPECT_EQ(requeued.state, JobState::kPending);
  EXPECT_EQ(requeued.preemptions, 1);
  EXPECT_EQ(requeued.failures, 0) << "max_attempts is 1, yet it will run again";
  auto events = master_->Events(low);
  ASSERT_TRUE(events.ok());
  bool preempted = false;
  for (const auto& e : *events) preempted |= e.type == "preempted";
  EXPECT_TRUE(preempted);
  // When the high job ends, the low one runs again as attempt 2.
  Report("a", TaskState::kSucceeded, 0);
  RunPosted();
  EXPECT_EQ(GetJob(low).state, JobState::kStarting);
  EXPECT_EQ(GetJob(low).attempt, 2);
}

TEST_P(MasterTest, TheMasterTicksByItselfOnItsLoopAndStopsWhenGone) {
  AddNode("a", 1);
  ASSERT_EQ(loop_.later_.size(), 1u) << "the first tick is asked for at creation";
  // Ticks on time, every 500 ms, and no word from the node: once the node timeout has passed, a
  // tick notices.
  for (int i = 0; i < 22; ++i) {
    clock_.Advance(std::chrono::milliseconds(500));
    loop_.later_.back()();
  }
  EXPECT_EQ(master_->nodes().List().at(0).node->state, NodeState::kLost);
  EXPECT_EQ(loop_.later_.size(), 23u) << "each tick asks for the next one";
  master_.reset();
  loop_.later_.back()();  // a tick after the master is gone does nothing
}

TEST_P(MasterTest, WhyWithNoReadyNodeSaysSoInsteadOfAskingForASmallerJob) {
  // As right after a master restart, before any agent has come back.
  JobId waiting = Submit(1, 1);
  RunPosted();
  auto e = master_->Explain(waiting);
  ASSERT_TRUE(e.ok());
  EXPECT_TRUE(e->unschedulable);
  std::string all;
  for (const auto& line : e->details) all += line + "\n";
  EXPECT_THAT(all, HasSubstr("no node is ready"));
  EXPECT_THAT(all, Not(HasSubstr("submit a smaller job")));
  // Once a node too small for it is ready, the advice to shrink it is right.
  AddNode("a", 0);
  RunPosted();
  e = master_->Explain(waiting);
  ASSERT_TRUE(e.ok());
  all.clear();
  for (const auto& line : e->details) all += line + "\n";
  EXPECT_THAT(all, HasSubstr("submit a smaller job"));
}

TEST_P(MasterTest, WhyNamesWhoIsAheadInThePolicysOwnOrder) {
  AddNode("a", 1);
  JobId running = Submit(1, 1);
  RunPosted();
  ASSERT_EQ(GetJob(running).state, JobState::kStarting);
  JobId low = Submit(1, 1, 1, "default", -100);
  clock_.Advance(std::chrono::seconds(1));
  JobId high = Submit(1, 1, 1, "default", 100);
  RunPosted();
  auto ahead_of = [&](JobId id) {
    auto e = master_->Explain(id);
    EXPECT_TRUE(e.ok());
    for (const auto& line : e->details) {
      if (line.rfind("policy ", 0) == 0) return line;
    }
    return std::string("no policy line");
  };
  // The default policy: priority first within a team.
  EXPECT_THAT(ahead_of(high), HasSubstr("policy default"));
  EXPECT_THAT(ahead_of(high), HasSubstr("0 of the 2 waiting jobs come before it"));
  EXPECT_THAT(ahead_of(low), HasSubstr("1 of the 2 waiting jobs comes before it, 1 of them of "
                                       "team default"));
  // fifo: submission order only, whatever the priority.
  scheduler_config_.policy = scheduler::Policy::kFifo;
  Start();
  EXPECT_THAT(ahead_of(high), HasSubstr("policy fifo (submission order): 1 of the 2"));
  EXPECT_THAT(ahead_of(low), HasSubstr("0 of the 2 waiting jobs come before it"));
  // las: the least GPU time first (both have had none), then submission order.
  scheduler_config_.policy = scheduler::Policy::kLeastAttainedService;
  Start();
  EXPECT_THAT(ahead_of(high), HasSubstr("policy las (least GPU time received first"));
  EXPECT_THAT(ahead_of(high), HasSubstr("1 of the 2 waiting jobs comes before it"));
}

using Call = cohort::testing::FailingStateStore::Call;

TEST_P(MasterTest, AWriteThatFailsBeforeAChangeIsAnErrorAndChangesNothing) {
  store_->FailNextWrites(1, {Call::kSaveNode});
  NodeInfo info;
  info.id = "a";
  info.address = "127.0.0.1";
  info.milli_cpus = 1000;
  info.memory_bytes = 1LL << 30;
  EXPECT_EQ(master_->nodes().Register(info).status().code(), StatusCode::kInternal);
  EXPECT_TRUE(master_->nodes().List().empty());

  store_->FailNextWrites(1, {Call::kSaveTeam});
  EXPECT_FALSE(master_->teams().Set(TeamQuota{"vision", 4, std::nullopt}).ok());
  EXPECT_EQ(master_->teams().List().size(), 1u) << "only the implicit default team";

  AddNode("a", 4);
  store_->FailNextWrites(1, {Call::kCreateJob});
  JobSpec spec;
  spec.name = "refused";
  TaskGroupSpec g;
  g.role = "worker";
  g.replicas = 1;
  g.resources = Resources{1, 1000, 1LL << 30};
  g.command = {"true"};
  spec.tasks.push_back(g);
  EXPECT_EQ(master_->Submit(spec, "ada").status().code(), StatusCode::kInternal);
  EXPECT_TRUE(master_->ListJobs({}).empty());
  RunPosted();
  EXPECT_TRUE(master_->nodes().List().at(0).gpu_holders.empty());
  EXPECT_TRUE(fail_stops_.empty()) << "nothing had changed: no reason to stop";
}

TEST_P(MasterTest, AWriteThatFailsAfterAChangeStopsTheMasterAndLosesNothingAcknowledged) {
  AddNode("a", 4);
  JobId id = Submit(2, 2);
  RunPosted();
  Report("a", TaskState::kRunning);
  ASSERT_EQ(GetJob(id).state, JobState::kRunning);  // acknowledged: the agent was told
  store_->FailWrites(true, {Call::kSaveJob});
  auto killed = master_->Kill(id, "user ada");
  EXPECT_EQ(killed.status().code(), StatusCode::kInternal) << "the kill was not acknowledged";
  ASSERT_EQ(fail_stops_.size(), 1u);
  EXPECT_THAT(fail_stops_[0].message(), HasSubstr("saving job " + std::to_string(id)));
  EXPECT_THAT(fail_stops_[0].message(), HasSubstr("disk full"));
  // A task report that changes the job stops it too, and is not acknowledged either.
  AgentReport report;
  report.applied_version = master_->nodes().DesiredFor("a")->version;
  for (int i = 0; i < 2; ++i) {
    report.tasks.push_back(TaskReport{
        TaskId{id, 1, "worker", i}, TaskState::kSucceeded, 0, std::nullopt, 100, {}, {}});
  }
  EXPECT_FALSE(master_->nodes().Sync("a", report).ok());
  EXPECT_EQ(fail_stops_.size(), 2u);

  // Restarted from the store, the master has the job as it was last acknowledged.
  Start();
  EXPECT_EQ(GetJob(id).state, JobState::kRunning);
  EXPECT_EQ(master_->nodes().List().size(), 1u);
  EXPECT_EQ(GetJob(id).tasks.size(), 2u);
  // ...and its GPUs are still held: a new job does not get them when the node is back.
  AddNode("a", 4);
  JobId next = Submit(1, 1);
  RunPosted();
  EXPECT_EQ(GetJob(next).state, JobState::kPending);
}

INSTANTIATE_TEST_SUITE_P(Scheduling, MasterTest, ::testing::Values(false, true),
                         [](const ::testing::TestParamInfo<bool>& info) {
                           return info.param ? "BetweenPasses" : "FullPasses";
                         });

}  // namespace
}  // namespace cohort::master
