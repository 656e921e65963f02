// A job's outputs on their way to the store, as the master sees them (master/artifacts.h): who
// uploads them, whether the team's quota takes them, and where each upload stands, written with
// the job.
#include "master/artifacts.h"

#include <fmt/format.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "master/master_test_fixture.h"

namespace cohort::master {
namespace {

using ::testing::HasSubstr;

// The upload of the outputs of attempt `attempt` of `job`: its first task's id.
std::string IdOf(JobId job, int attempt) { return TaskId{job, attempt, "worker", 0}.ToString(); }

class ArtifactsTest : public MasterTest {
 protected:
  // A job of `replicas` 1-GPU workers that ran on node "a" and succeeded.
  JobId EndedJob(int replicas = 1, const std::string& team = "default") {
    JobId id = Submit(replicas, 1, 1, team);
    RunPosted();
    Report("a", TaskState::kRunning);
    Report("a", TaskState::kSucceeded, 0);
    EXPECT_EQ(GetJob(id).state, JobState::kSucceeded);
    return id;
  }
  static UploadProgress Upload(JobId job, UploadState state, int64_t files, int64_t bytes,
                               int64_t done = 0, int attempt = 1) {
    UploadProgress p;
    p.id = IdOf(job, attempt);
    p.state = state;
    p.files_total = files;
    p.bytes_total = bytes;
    p.files_done = done;
    p.bytes_done = files ? bytes * done / files : 0;
    return p;
  }
  DesiredState SyncUploads(std::vector<UploadProgress> uploads) {
    AgentReport report = ReportOf("a", TaskState::kRunning);
    report.uploads = std::move(uploads);
    auto answer = master_->nodes().Sync("a", report);
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
};

TEST_P(ArtifactsTest, TheFirstTaskCarriesWhereTheJobsOutputsGo) {
  AddNode("a", 2);
  JobId id = Submit(2, 1);
  RunPosted();
  auto desired = master_->nodes().DesiredFor("a");
  ASSERT_TRUE(desired.ok());
  ASSERT_EQ(desired->tasks.size(), 2u);
  int uploaders = 0;
  for (const auto& t : desired->tasks) {
    if (t.outputs_key.empty()) continue;
    ++uploaders;
    EXPECT_EQ(t.id.index, 0);
    EXPECT_EQ(t.outputs_key, fmt::format("jobs/{}/outputs", id));
    EXPECT_FALSE(t.output_dir.empty());
  }
  EXPECT_EQ(uploaders, 1);
}

TEST_P(ArtifactsTest, AnUploadIsAllowedFollowedAndForgottenOnceStoredAfterTheGpusWentBack) {
  AddNode("a", 1);
  JobId id = EndedJob();
  // The job has ended and its GPU is free before its outputs are anywhere.
  EXPECT_FALSE(GetJob(id).artifacts);
  JobId next = Submit(1, 1);
  RunPosted();
  EXPECT_EQ(GetJob(next).state, JobState::kStarting);

  DesiredState answer = SyncUploads({Upload(id, UploadState::kWaiting, 3, 3000)});
  std::string upload_id = IdOf(id, 1);
  ASSERT_EQ(answer.allow_uploads.count(upload_id), 1u);
  EXPECT_EQ(answer.allow_uploads.at(upload_id).directory, (dir_ / "store").string());
  EXPECT_TRUE(answer.forget_uploads.empty());
  ASSERT_TRUE(GetJob(id).artifacts);
  EXPECT_EQ(GetJob(id).artifacts->state, UploadState::kUploading);
  EXPECT_THAT(Events(id), HasSubstr("artifacts: uploading its outputs: 3 files, 2.9Ki"));

  SyncUploads({Upload(id, UploadState::kUploading, 3, 3000, 1)});
  EXPECT_EQ(GetJob(id).artifacts->files_done, 1);
  answer = SyncUploads({Upload(id, UploadState::kStored, 3, 3000, 3)});
  EXPECT_EQ(answer.forget_uploads, std::vector<std::string>{upload_id});
  EXPECT_EQ(GetJob(id).artifacts->state, UploadState::kStored);
  EXPECT_THAT(Events(id), HasSubstr("artifacts: outputs stored: 3 files, 2.9Ki"));

  // Kept with the job.
  Start();
  ASSERT_TRUE(GetJob(id).artifacts);
  EXPECT_EQ(GetJob(id).artifacts->state, UploadState::kStored);
  EXPECT_EQ(GetJob(id).artifacts->bytes_done, 3000);
  EXPECT_EQ(master_->artifacts().BytesOf("default"), 3000);
}

TEST_P(ArtifactsTest, OutputsPastTheTeamsQuotaAreRefusedSayingWhy) {
  store_quota_ = 1000;
  Start();
  AddNode("a", 1);
  JobId first = EndedJob();
  SyncUploads({Upload(first, UploadState::kWaiting, 1, 800)});
  SyncUploads({Upload(first, UploadState::kStored, 1, 800, 1)});
  JobId second = EndedJob();
  DesiredState answer = SyncUploads({Upload(second, UploadState::kWaiting, 2, 300)});
  std::string upload_id = IdOf(second, 1);
  EXPECT_TRUE(answer.allow_uploads.empty());
  ASSERT_EQ(answer.refuse_uploads.count(upload_id), 1u);
  EXPECT_THAT(answer.refuse_uploads[upload_id],
              HasSubstr("team default's store quota of 1000 cannot take these 2 files (300 "
                        "bytes): its other jobs' outputs take 800 bytes"));
  EXPECT_EQ(GetJob(second).artifacts->state, UploadState::kFailed);
  EXPECT_THAT(Events(second), HasSubstr("outputs not stored: team default's store quota"));
  // An agent that did not hear it (it restarted) asks again, and is told again.
  answer = SyncUploads({Upload(second, UploadState::kWaiting, 2, 300)});
  EXPECT_EQ(answer.refuse_uploads.count(upload_id), 1u);
  // Its failure is reported back and forgotten.
  UploadProgress failed = Upload(second, UploadState::kFailed, 2, 300);
  failed.reason = answer.refuse_uploads[upload_id];
  answer = SyncUploads({failed});
  EXPECT_EQ(answer.forget_uploads, std::vector<std::string>{upload_id});
  EXPECT_EQ(master_->artifacts().BytesOf("default"), 800);
}

TEST_P(ArtifactsTest, UploadsOfUnknownJobsOtherNodesAndEarlierAttemptsAreNotRecorded) {
  AddNode("a", 1);
  AddNode("b", 1);
  JobId id = Submit(1, 1, /*max_attempts=*/2);
  RunPosted();
  std::string node = GetJob(id).tasks[0].node_id;
  auto report = [&](TaskState state, std::optional<int> code) {
    auto answer = master_->nodes().Sync(node, ReportOf(node, state, code));
    ASSERT_TRUE(answer.ok());
  };
  report(TaskState::kRunning, std::nullopt);
  report(TaskState::kFailed, 1);
  RunPosted();
  ASSERT_EQ(GetJob(id).attempt, 2);
  node = GetJob(id).tasks[0].node_id;
  report(TaskState::kRunning, std::nullopt);
  report(TaskState::kSucceeded, 0);
  auto sync = [&](const std::string& from, std::vector<UploadProgress> uploads) {
    AgentReport r = ReportOf(from, TaskState::kRunning);
    r.uploads = std::move(uploads);
    auto answer = master_->nodes().Sync(from, r);
    EXPECT_TRUE(answer.ok()) << answer.status().ToString();
    return answer.ok() ? *answer : DesiredState{};
  };
  DesiredState answer = sync(node, {Upload(999, UploadState::kWaiting, 1, 10),
                                    Upload(998, UploadState::kStored, 1, 10, 1)});
  EXPECT_THAT(answer.refuse_uploads[IdOf(999, 1)], HasSubstr("job 999 does not exist"));
  EXPECT_EQ(answer.forget_uploads, std::vector<std::string>{IdOf(998, 1)});
  // Another node may not speak for this job's task.
  std::string other = node == "a" ? "b" : "a";
  answer = sync(other, {Upload(id, UploadState::kWaiting, 1, 10, 0, 2)});
  EXPECT_THAT(answer.refuse_uploads[IdOf(id, 2)], HasSubstr("may not ship for task worker/0"));
  EXPECT_FALSE(GetJob(id).artifacts);
  // Attempt 2's upload is the job's; attempt 1's, still on its agent, changes nothing.
  sync(node, {Upload(id, UploadState::kWaiting, 1, 10, 0, 2)});
  EXPECT_EQ(GetJob(id).artifacts->id, IdOf(id, 2));
  std::string first_node = GetJob(id).history[0].nodes.at("worker/0");
  answer = sync(first_node, {Upload(id, UploadState::kWaiting, 5, 50, 0, 1)});
  EXPECT_EQ(answer.refuse_uploads[IdOf(id, 1)], "a later attempt's outputs replace these");
  EXPECT_EQ(GetJob(id).artifacts->id, IdOf(id, 2));
}

INSTANTIATE_TEST_SUITE_P(Scheduling, ArtifactsTest, ::testing::Bool());

}  // namespace
}  // namespace cohort::master
