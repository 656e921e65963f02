// Idle sessions (master/idle_sessions.h) and the session policy (master/session_policy.h) on the
// master's parts with a manual clock: the warning and the end of a session idle for its
// timeout, what puts the end off (input, a busy GPU), the cluster's bounds at submission, and
// a preemption that waits for its warning.
#include "master/idle_sessions.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <memory>
#include <string>
#include <vector>

#include "auth/job_credential.h"
#include "master/master_parts_test_fixture.h"
#include "master/session_policy.h"

namespace cohort::master {
namespace {

using std::chrono::minutes;
using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::IsEmpty;

class IdleSessionsTest : public MasterPartsTest {
 protected:
  void SetUp() override {
    MasterConfig config;
    config.sessions.max_idle_timeout = minutes(30);
    config.sessions.warning = minutes(5);
    // A session's task holds the job's credential, which the master makes with its key.
    config.job_credential_key = std::string(auth::kJobCredentialKeyBytes, 'k');
    Wire(config);
    idle_ = std::make_unique<IdleSessions>(parts_->config.sessions, parts_->jobs,
                                           parts_->reconciler.resources(), parts_->lifecycle);
    auto notify = [this](JobId, const std::string& text) { notices_.push_back(text); };
    idle_->SetNotify(notify);
    parts_->lifecycle.SetSessionNotify(notify);
  }

  static JobSpec Session(std::optional<Duration> idle_timeout = std::nullopt) {
    JobSpec spec = GangSpec(1, 1);
    spec.framework = Framework::kNone;
    spec.tasks[0].role = "shell";
    spec.tasks[0].command.clear();
    spec.session = SessionSpec{SessionKind::kShell, idle_timeout};
    spec.restart.on = {};
    return spec;
  }

  // A session running on node "a", watched from now.
  JobId RunningSession(JobSpec spec = Session()) {
    AddNode("a", 1);
    JobId id = Started(std::move(spec));
    Report("a", TaskState::kRunning);
    EXPECT_EQ(job(id).state, JobState::kRunning);
    idle_->Tick(clock_.Now());
    return id;
  }

  // Its GPU sampled `percent` busy now.
  void GpuBusy(int percent) {
    AgentReport report = ReportOf("a", TaskState::kRunning);
    report.gpu_samples = {GpuSamples{0, {GpuSample{clock_.Now(), percent, 0}}}};
    ASSERT_TRUE(parts_->reconciler.Sync("a", report).ok());
  }

  void Pass(Duration d) {
    clock_.Advance(d);
    idle_->Tick(clock_.Now());
    parts_->lifecycle.PreemptWarnedSessions(clock_.Now());
  }

  std::unique_ptr<IdleSessions> idle_;
  std::vector<std::string> notices_;
};

TEST_F(IdleSessionsTest, AnIdleSessionIsWarnedThenEndedKilledWithTheReason) {
  JobId id = RunningSession();
  Pass(minutes(24));
  EXPECT_THAT(notices_, IsEmpty());
  Pass(minutes(1));
  EXPECT_THAT(notices_, ElementsAre("idle for 25m (its GPU idle and no input): this session "
                                    "ends in 5m unless it is used"));
  EXPECT_THAT(EventsText(id), HasSubstr("idle: idle for 25m"));
  EXPECT_EQ(job(id).state, JobState::kRunning);
  Pass(minutes(4));
  EXPECT_EQ(notices_.size(), 1u) << "warned once";
  Pass(minutes(1));
  EXPECT_EQ(job(id).state, JobState::kStopping);
  EXPECT_EQ(job(id).stop_target, JobState::kKilled);
  EXPECT_THAT(notices_.back(), HasSubstr("this session ends now: idle for 30m"));
  Report("a", TaskState::kKilled);
  loop_->RunPosted();
  EXPECT_EQ(job(id).state, JobState::kKilled);
  EXPECT_EQ(job(id).message, "ended: idle for 30m (its GPU idle and no input), its idle timeout");
  EXPECT_THAT(EventsText(id), HasSubstr("reclaimed: ended: idle for 30m"));
  EXPECT_FALSE(idle_->IdleFor(id, clock_.Now()).has_value()) << "forgotten once it ends";
}

TEST_F(IdleSessionsTest, InputOrABusyGpuPutsTheEndOffAndLiftsAWarning) {
  JobId id = RunningSession(Session(minutes(10)));  // warned 5m before: half of 10m
  Pass(minutes(6));
  ASSERT_EQ(notices_.size(), 1u);
  idle_->NoteInput(id, clock_.Now());
  EXPECT_EQ(notices_.back(), "in use again: the session stays");
  Pass(minutes(4));
  EXPECT_EQ(notices_.size(), 2u) << "4m after the input: no warning yet";
  GpuBusy(1);  // 1%: not in use
  Pass(minutes(2));
  EXPECT_EQ(notices_.size(), 3u) << "warned again: " << notices_.back();
  GpuBusy(40);  // its newest sample busy: in use now
  Pass(std::chrono::seconds(30));
  EXPECT_EQ(notices_.back(), "its GPUs are in use again: the session stays");
  EXPECT_EQ(*idle_->IdleFor(id, clock_.Now()), Duration::zero());
  Pass(minutes(1));
  EXPECT_EQ(*idle_->IdleFor(id, clock_.Now()), minutes(1))
      << "a sample a minute old says nothing of now";
  GpuBusy(0);
  Pass(minutes(8));
  EXPECT_EQ(job(id).state, JobState::kRunning);
  Pass(minutes(1));
  EXPECT_EQ(job(id).state, JobState::kStopping) << "10m after the GPU was last seen busy";
}

TEST_F(IdleSessionsTest, APreemptedSessionIsWarnedAndStopsOnlyWhenTheWarningIsOver) {
  JobId id = RunningSession();
  GpuBusy(90);
  parts_->lifecycle.Preempt(Preemption{id, 77, "preempted by job 77 (priority high)"});
  EXPECT_EQ(job(id).state, JobState::kRunning) << "not yet";
  EXPECT_THAT(notices_, ElementsAre("to be preempted for job 77 in 5m: preempted by job 77 "
                                    "(priority high); save your work"));
  EXPECT_THAT(EventsText(id), HasSubstr("warning: to be preempted for job 77 in 5m"));
  parts_->lifecycle.Preempt(Preemption{id, 77, "again"});  // heard once
  EXPECT_EQ(notices_.size(), 1u);
  Pass(minutes(4));
  EXPECT_EQ(job(id).state, JobState::kRunning);
  Pass(minutes(1));
  EXPECT_EQ(job(id).state, JobState::kStopping);
  EXPECT_THAT(job(id).message, HasSubstr("preempted by job 77"));
  // A job that is no session is preempted at once, as before.
  AddNode("b", 1);
  JobSpec batch = GangSpec(1, 1);
  batch.restart.on = {};
  JobId other = Started(batch);
  Report("b", TaskState::kRunning);
  parts_->lifecycle.Preempt(Preemption{other, 77, "preempted by job 77"});
  EXPECT_EQ(job(other).state, JobState::kStopping);
}

TEST(SessionPolicy, TheClustersBoundsAndPriorityAtSubmission) {
  SessionPolicy policy;
  policy.max_idle_timeout = minutes(30);
  policy.warning = minutes(5);
  policy.priority = kPriorityLow;
  JobSpec spec;
  spec.session = SessionSpec{SessionKind::kShell, std::chrono::hours(2)};
  spec.priority = kPriorityHigh;
  Status refused = ApplySessionPolicy(policy, spec);
  ASSERT_EQ(refused.code(), StatusCode::kInvalidArgument);
  EXPECT_THAT(refused.details(), ElementsAre("session.idle_timeout: 2h is longer than this "
                                             "cluster's longest, 30m (cohortd master "
                                             "--max-idle-timeout)"));
  spec.session->idle_timeout = minutes(4);
  ASSERT_TRUE(ApplySessionPolicy(policy, spec).ok());
  EXPECT_EQ(spec.priority, kPriorityLow) << "the cluster's, whatever the spec said";
  EXPECT_EQ(IdleTimeoutOf(policy, spec), minutes(4));
  EXPECT_EQ(WarningOf(policy, spec), minutes(2)) << "at most half the timeout";
  spec.session->idle_timeout.reset();
  EXPECT_EQ(IdleTimeoutOf(policy, spec), minutes(30));
  EXPECT_EQ(WarningOf(policy, spec), minutes(5));
  JobSpec batch;
  batch.priority = kPriorityHigh;
  ASSERT_TRUE(ApplySessionPolicy(policy, batch).ok());
  EXPECT_EQ(batch.priority, kPriorityHigh) << "other jobs unchanged";
}

}  // namespace
}  // namespace cohort::master
