// The scheduling loop alone: a real JobBook and cluster core over an in-memory store, the event
// loop run by hand, and a fake DecisionTaker that records what the loop asks of it (and can
// refuse a start) in place of the job lifecycle.
#include "master/scheduling_loop.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <memory>
#include <vector>

#include "master/master_parts_test_fixture.h"
#include "testing/memory_state_store.h"

namespace cohort::master {
namespace {

using std::chrono::minutes;
using std::chrono::seconds;
using ::testing::ElementsAre;
using ::testing::IsEmpty;

// Records every decision; a start it accepts moves the job to STARTING, as the lifecycle does.
class FakeTaker final : public DecisionTaker {
 public:
  explicit FakeTaker(JobBook& jobs) : jobs_(jobs) {}

  Status Start(Job& job, const JobPlacement& placement) override {
    starts.push_back(placement);
    if (refuse_starts) return Status::Unavailable("no free port (the fake taker refuses)");
    job.state = JobState::kStarting;
    job.attempt += 1;
    jobs_.Reindex(job);
    return Status::Ok();
  }
  void Preempt(const Preemption& preemption) override { preempted.push_back(preemption); }
  bool Grow(const Growth& growth) override {
    grown.push_back(growth);
    return true;
  }
  void Shrink(const cohort::Shrink& shrink) override { shrunk.push_back(shrink); }

  std::vector<JobId> StartedIds() const {
    std::vector<JobId> ids;
    for (const auto& p : starts) ids.push_back(p.job_id);
    return ids;
  }

  bool refuse_starts = false;
  std::vector<JobPlacement> starts;
  std::vector<Preemption> preempted;
  std::vector<Growth> grown;
  std::vector<cohort::Shrink> shrunk;

 private:
  JobBook& jobs_;
};

class SchedulingLoopTest : public ::testing::Test {
 protected:
  void SetUp() override { Build(dispatch::kNeverIncremental); }

  // (Re)builds the loop; with `incremental_above` 0 arrivals are decided between passes.
  void Build(size_t incremental_above) {
    scheduling_.reset();
    scheduling_ = std::make_unique<SchedulingLoop>(jobs_, journal_, clock_, loop_,
                                                   scheduler::NewScheduler(), incremental_above);
    scheduling_->SetDecisionTaker(&taker_);
  }

  // A node as the registry keeps it, handed to the cluster core.
  void PutNode(const std::string& id, int gpus, NodeState state = NodeState::kReady) {
    Node node;
    node.info = NodeInfoOf(id, gpus);
    node.state = state;
    node.last_seen = clock_.Now();
    scheduling_->PutNode(nodes_.Put(std::move(node), MonoTime{}));
  }

  // A pending job of `replicas` workers with `gpus` each, as a submission leaves it.
  Job& Pending(int replicas, int gpus, std::optional<Timestamp> not_before = std::nullopt) {
    Job job;
    job.spec = GangSpec(replicas, gpus);
    job.user = "ada";
    job.state = JobState::kPending;
    job.submitted_at = clock_.Now();
    job.message = "waiting for the scheduler";
    job.version = 1;
    job.not_before = not_before;
    auto stored = jobs_.Create(std::move(job), {});
    EXPECT_TRUE(stored.ok()) << stored.status().ToString();
    return **stored;
  }

  int64_t FreeGpus(const std::string& node) {
    const NodeCapacity* n = scheduling_->cluster().FindNode(node);
    EXPECT_NE(n, nullptr);
    return n ? n->free.gpus : -1;
  }

  ManualClock clock_;
  HandLoop loop_;
  cohort::testing::MemoryStateStore store_;
  std::vector<Status> fail_stops_;
  Journal journal_{store_, [this](const Status& s) { fail_stops_.push_back(s); }};
  JobBook jobs_{journal_, clock_, scheduler::RuntimeHistory::kMaxKeys};
  NodeRegistry nodes_;
  FakeTaker taker_{jobs_};
  std::unique_ptr<SchedulingLoop> scheduling_;
};

TEST_F(SchedulingLoopTest, RequestsBeforeThePassRunsPostOnePassAndTheNextRequestPostsAgain) {
  PutNode("a", 2);
  Pending(1, 1);
  scheduling_->RequestSchedule();
  scheduling_->RequestSchedule();
  scheduling_->RequestSchedule();
  EXPECT_EQ(loop_.posts(), 1);
  EXPECT_THAT(taker_.starts, IsEmpty()) << "a request never schedules inside the call";

  loop_.RunPosted();
  EXPECT_EQ(taker_.starts.size(), 1u);
  EXPECT_EQ(scheduling_->passes().count(), 1u);

  scheduling_->RequestSchedule();
  EXPECT_EQ(loop_.posts(), 2) << "the pass that ran takes the next request";
}

TEST_F(SchedulingLoopTest, SchedulePlacesAPendingJobThatFitsAndTakesItsResources) {
  PutNode("a", 2);
  JobId id = Pending(1, 1).id;
  scheduling_->Schedule();

  ASSERT_EQ(taker_.starts.size(), 1u);
  const JobPlacement& placement = taker_.starts[0];
  EXPECT_EQ(placement.job_id, id);
  ASSERT_EQ(placement.tasks.size(), 1u);
  EXPECT_EQ(placement.tasks[0].node_id, "a");
  EXPECT_EQ(placement.tasks[0].gpus.size(), 1u);
  EXPECT_TRUE(scheduling_->cluster().Holds(id));
  EXPECT_EQ(FreeGpus("a"), 1);
  EXPECT_EQ(scheduling_->ReasonFor(id), nullptr) << "a job that starts does not wait";
}

TEST_F(SchedulingLoopTest, AStartTheTakerRefusesGivesTheResourcesBackAndWaitsForTheTick) {
  PutNode("a", 2);
  JobId id = Pending(1, 2).id;
  taker_.refuse_starts = true;
  scheduling_->Schedule();

  ASSERT_THAT(taker_.StartedIds(), ElementsAre(id));
  EXPECT_FALSE(scheduling_->cluster().Holds(id));
  EXPECT_EQ(FreeGpus("a"), 2) << "the cluster core gave back what it had taken";
  EXPECT_EQ(jobs_.pending().count(id), 1u);
  EXPECT_EQ(loop_.posts(), 0) << "a pass at once would fail the same way";
  EXPECT_EQ(taker_.starts.size(), 1u);

  taker_.refuse_starts = false;
  scheduling_->OnTick(clock_.Now());
  EXPECT_THAT(taker_.StartedIds(), ElementsAre(id, id)) << "the tick runs the full pass";
  EXPECT_TRUE(scheduling_->cluster().Holds(id));
  EXPECT_EQ(FreeGpus("a"), 0);
  EXPECT_EQ(jobs_.pending().count(id), 0u);
}

TEST_F(SchedulingLoopTest, AJobBackingOffIsOfferedOnlyOnceATickPassesTheEndOfItsBackoff) {
  PutNode("a", 2);
  Timestamp ends = clock_.Now() + seconds(30);
  Job& job = Pending(1, 1, ends);
  JobId id = job.id;
  scheduling_->NoteBackoff(job);
  EXPECT_TRUE(SchedulingLoop::BackingOff(job, clock_.Now()));

  scheduling_->Schedule();
  EXPECT_THAT(taker_.starts, IsEmpty());

  clock_.Advance(seconds(10));
  scheduling_->OnTick(clock_.Now());
  loop_.RunPosted();
  EXPECT_THAT(taker_.starts, IsEmpty()) << "still backing off";

  clock_.Advance(seconds(25));
  scheduling_->OnTick(clock_.Now());
  EXPECT_EQ(loop_.waiting(), 1u) << "the end of the backoff asks for a pass";
  loop_.RunPosted();
  EXPECT_THAT(taker_.StartedIds(), ElementsAre(id));
}

TEST_F(SchedulingLoopTest, PendingOfCarriesTheJobsFields) {
  Job& job = Pending(2, 3);
  job.spec.team = "vision";
  job.spec.priority = kPriorityHigh;
  job.spec.max_runtime = minutes(90);
  job.spec.constraints.gpu_model = "H100";
  job.preemptions = 2;
  Timestamp ended = clock_.Now() + minutes(5);
  job.history.push_back(AttemptSummary{1, clock_.Now(), ended, "preempted", {}});

  PendingJob p = scheduling_->PendingOf(job);
  EXPECT_EQ(p.job_id, job.id);
  EXPECT_EQ(p.team, "vision");
  EXPECT_EQ(p.user, "ada");
  EXPECT_EQ(p.priority, kPriorityHigh);
  EXPECT_EQ(p.submitted_at, job.submitted_at);
  ASSERT_EQ(p.tasks.size(), 2u);
  EXPECT_EQ(p.tasks[1].role, "worker");
  EXPECT_EQ(p.tasks[1].index, 1);
  EXPECT_EQ(p.tasks[1].resources.gpus, 3);
  EXPECT_EQ(p.max_runtime, minutes(90));
  EXPECT_EQ(p.constraints.gpu_model, "H100");
  EXPECT_EQ(p.preemptions, 2);
  EXPECT_EQ(p.waiting_since, ended) << "it waits again from the end of its last attempt";
}

TEST_F(SchedulingLoopTest, TheReasonAWaitingJobWaitsIsKeptAndForgotten) {
  PutNode("a", 1);
  Job& job = Pending(1, 4);
  JobId id = job.id;
  uint64_t version = job.version;
  scheduling_->Schedule();

  EXPECT_THAT(taker_.starts, IsEmpty());
  const PendingReason* reason = scheduling_->ReasonFor(id);
  ASSERT_NE(reason, nullptr);
  EXPECT_FALSE(reason->reason.empty());
  EXPECT_TRUE(reason->unschedulable) << reason->reason;
  EXPECT_EQ(jobs_.At(id).message, reason->reason) << "watchers see why it waits";
  EXPECT_GT(jobs_.At(id).version, version);

  uint64_t after_first = jobs_.At(id).version;
  scheduling_->Schedule();
  EXPECT_EQ(jobs_.At(id).version, after_first) << "the same reason again is no change";

  scheduling_->ForgetReason(id);
  EXPECT_EQ(scheduling_->ReasonFor(id), nullptr);
}

TEST_F(SchedulingLoopTest, PassesCountsOnlyFullPassesThatRan) {
  PutNode("a", 1);
  scheduling_->Schedule();
  EXPECT_EQ(scheduling_->passes().count(), 0u) << "nothing waits: no pass is needed";
  Pending(1, 4);
  scheduling_->Schedule();
  scheduling_->Schedule();
  EXPECT_EQ(scheduling_->passes().count(), 2u);
}

TEST_F(SchedulingLoopTest, ANodeThatIsNotReadyIsKnownToTheCoreButGetsNoWork) {
  PutNode("a", 2, NodeState::kUnreachable);
  JobId id = Pending(1, 1).id;
  ASSERT_NE(scheduling_->cluster().FindNode("a"), nullptr);
  EXPECT_FALSE(scheduling_->cluster().IsReady("a"));
  scheduling_->Schedule();
  EXPECT_THAT(taker_.starts, IsEmpty());

  PutNode("a", 2);  // its agent synced: ready
  scheduling_->Schedule();
  EXPECT_THAT(taker_.StartedIds(), ElementsAre(id));
}

TEST_F(SchedulingLoopTest, BetweenPassesAnArrivalThatFitsStartsAtOnceWithoutAPass) {
  Build(0);
  PutNode("a", 2);
  JobId first = Pending(1, 1).id;
  scheduling_->Schedule();  // leaves the residue that decisions between passes use
  ASSERT_THAT(taker_.StartedIds(), ElementsAre(first));
  ASSERT_TRUE(scheduling_->Incremental());

  Job& second = Pending(1, 1);
  scheduling_->Arrive(second);
  EXPECT_THAT(taker_.StartedIds(), ElementsAre(first, second.id));
  EXPECT_EQ(loop_.posts(), 0);
  EXPECT_EQ(FreeGpus("a"), 0);
}

}  // namespace
}  // namespace cohort::master
