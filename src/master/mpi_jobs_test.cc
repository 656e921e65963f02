// MPI jobs in the master (docs/job-spec.md, "MPI"): what their launches carry (the hostfile, the
// task tools, the exec service, the job's credential), and that the launcher's success is the
// job's.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <fmt/format.h>

#include "auth/job_credential.h"
#include "master/master_test_fixture.h"

namespace cohort::master {
namespace {

using ::testing::HasSubstr;

class MpiJobsTest : public MasterTest {
 protected:
  JobId SubmitMpi() {
    JobSpec spec;
    spec.name = "ring";
    spec.framework = Framework::kMpi;
    TaskGroupSpec launcher;
    launcher.role = "launcher";
    launcher.command = {"mpirun", "python3", "ring.py"};
    launcher.resources = Resources{.gpus = 0, .milli_cpus = 500, .memory_bytes = 1LL << 30};
    TaskGroupSpec worker;
    worker.role = "worker";
    worker.replicas = 2;
    worker.resources = Resources{.gpus = 4, .milli_cpus = 1000, .memory_bytes = 1LL << 30};
    spec.tasks = {launcher, worker};
    spec.restart.max_attempts = 1;
    auto job = master_->Submit(spec, "ada");
    EXPECT_TRUE(job.ok()) << job.status().ToString();
    return job.ok() ? job->id : 0;
  }

  std::map<std::string, AgentReport> running_;  // what each node reported last

  std::vector<TaskLaunch> Launches(JobId id) { return LaunchesOf(id, {"a", "b"}); }
};

TEST_P(MpiJobsTest, ItsLaunchesCarryTheHostfileTheToolsTheServiceAndOneCredential) {
  AddNode("a", 4);
  AddNode("b", 4);
  JobId id = SubmitMpi();
  RunPosted();
  ASSERT_NE(GetJob(id).state, JobState::kPending) << GetJob(id).message;
  auto launches = Launches(id);
  ASSERT_EQ(launches.size(), 3u);
  std::set<std::string> credentials;
  for (const auto& l : launches) {
    SCOPED_TRACE(l.id.ToString());
    ASSERT_EQ(l.env.count("COHORT_JOB_CREDENTIAL"), 1u);
    credentials.insert(l.env.at("COHORT_JOB_CREDENTIAL"));
    EXPECT_TRUE(l.tools);
    EXPECT_EQ(l.exec_service, l.id.role == "worker");
    ASSERT_EQ(l.files.size(), 1u);
    EXPECT_EQ(l.files[0].content, fmt::format("cohort-job{0}-worker-0 slots=4\n"
                                              "cohort-job{0}-worker-1 slots=4\n",
                                              id));
  }
  EXPECT_EQ(credentials.size(), 1u) << "every task of the attempt holds the same credential";
  EXPECT_EQ(credentials.begin()->size(), 64u);
  EXPECT_EQ(Launches(id)[0].env.at("COHORT_JOB_CREDENTIAL"), *credentials.begin())
      << "the same every time the launches are built";

  // Other frameworks' tasks get none, and no tools.
  JobId plain = Submit(1, 0);
  RunPosted();
  for (const auto& l : Launches(plain)) {
    EXPECT_EQ(l.env.count("COHORT_JOB_CREDENTIAL"), 0u);
    EXPECT_FALSE(l.tools || l.exec_service);
    EXPECT_TRUE(l.files.empty());
  }
}

TEST_P(MpiJobsTest, ARestartedMasterWithItsKeyGivesTheSameCredential) {
  job_credential_key_ = std::string(auth::kJobCredentialKeyBytes, 'k');
  Start();
  AddNode("a", 4);
  AddNode("b", 4);
  JobId id = SubmitMpi();
  RunPosted();
  std::string before = Launches(id).at(0).env.at("COHORT_JOB_CREDENTIAL");
  EXPECT_EQ(before, auth::JobCredential(job_credential_key_, id, 1));
  Start();
  RunPosted();
  auto after = Launches(id);
  ASSERT_FALSE(after.empty());
  EXPECT_EQ(after[0].env.at("COHORT_JOB_CREDENTIAL"), before);
}

TEST_P(MpiJobsTest, TheLaunchersSuccessIsTheJobsAndItsWorkersAreStopped) {
  AddNode("a", 4);
  AddNode("b", 4);
  JobId id = SubmitMpi();
  RunPosted();
  Report("a", TaskState::kRunning);
  Report("b", TaskState::kRunning);
  ASSERT_EQ(GetJob(id).state, JobState::kRunning);
  // The launcher's node reports it succeeded; its workers still run, as MPI workers do.
  for (const char* node : {"a", "b"}) {
    AgentReport report = ReportOf(node, TaskState::kRunning);
    running_[node] = report;
    for (auto& t : report.tasks) {
      if (t.id.role == "launcher") {
        t.state = TaskState::kSucceeded;
        t.exit_code = 0;
        t.finished_at = clock_.Now();
      }
    }
    ASSERT_TRUE(master_->nodes().Sync(node, report).ok());
  }
  const Job& stopping = GetJob(id);
  EXPECT_EQ(stopping.state, JobState::kStopping);
  EXPECT_EQ(stopping.message, "the launcher succeeded; stopping the workers");
  // The workers are told to stop (they leave the desired state), and end.
  EXPECT_TRUE(Launches(id).empty());
  for (const char* node : {"a", "b"}) {
    AgentReport report = running_[node];
    for (auto& t : report.tasks) {
      t.finished_at = clock_.Now();
      if (t.id.role == "worker") {
        t.state = TaskState::kKilled;
        t.signal = 15;
      } else {
        t.state = TaskState::kSucceeded;
        t.exit_code = 0;
      }
    }
    ASSERT_TRUE(master_->nodes().Sync(node, report).ok());
  }
  RunPosted();
  EXPECT_EQ(GetJob(id).state, JobState::kSucceeded) << GetJob(id).message;
}

INSTANTIATE_TEST_SUITE_P(BothModes, MpiJobsTest, ::testing::Bool());

}  // namespace
}  // namespace cohort::master
