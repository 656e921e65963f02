// The master with its SQLite store on a disk that fills up (testing::FaultVfs): new work is
// refused with a clear error and nothing in memory changes; a change already made in memory
// that cannot be written stops the master (docs/architecture.md, "Durability"); a restart on the
// still-full disk has every acknowledged job; once there is room, work is taken again.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <stdlib.h>

#include <deque>
#include <filesystem>

#include "master/master.h"
#include "testing/fault_vfs.h"
#include "testing/master_deps.h"

namespace cohort::master {
namespace {

namespace fs = std::filesystem;
using ::testing::HasSubstr;

// Nothing posted runs by itself: the test needs no scheduling pass.
class IdleLoop final : public EventLoop {
 public:
  void Post(std::function<void()>) override {}
  void RunAfter(Duration, std::function<void()>) override {}
};

JobSpec Spec(const std::string& name) {
  JobSpec spec;
  spec.name = name;
  TaskGroupSpec g;
  g.role = "worker";
  g.replicas = 2;
  g.resources = Resources{1, 1000, 1LL << 30};
  g.command = {"true"};
  spec.tasks.push_back(g);
  return spec;
}

class MasterFullDiskTest : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string pattern = (fs::temp_directory_path() / "cohort-master-full-XXXXXX").string();
    ASSERT_NE(mkdtemp(pattern.data()), nullptr);
    dir_ = pattern;
    db_ = (dir_ / "cohort.db").string();
    Start();
  }
  void TearDown() override {
    master_.reset();
    fs::remove_all(dir_);
  }

  // Starts a master (again) on the same data directory, as its supervisor would.
  void Start() {
    master_.reset();
    auto store = state::OpenSqliteStateStore(db_);
    ASSERT_TRUE(store.ok()) << store.status().ToString();
    MasterConfig config;
    config.data_dir = dir_.string();
    config.fail_stop = [this](const Status& s) { fail_stops_.push_back(s); };
    auto m =
        Master::Create(config,
                       cohort::testing::TestMasterDeps(config.data_dir, std::move(store).value(),
                                                       scheduler::NewScheduler({})),
                       clock_, loop_);
    ASSERT_TRUE(m.ok()) << m.status().ToString();
    master_ = std::move(m).value();
  }

  void ExpectDiskFull(const Status& s) {
    EXPECT_EQ(s.code(), StatusCode::kResourceExhausted) << s.ToString();
    EXPECT_THAT(s.message(), HasSubstr("the state database's disk is full: " + db_));
  }

  std::vector<JobId> JobIds() {
    std::vector<JobId> ids;
    for (const Job* job : master_->ListJobs({})) ids.push_back(job->id);
    return ids;
  }

  cohort::testing::FaultVfs vfs_;  // declared first: it outlives every store
  fs::path dir_;
  std::string db_;
  ManualClock clock_;
  IdleLoop loop_;
  std::vector<Status> fail_stops_;
  std::unique_ptr<Master> master_;
};

TEST_F(MasterFullDiskTest, RefusesNewWorkAndKeepsEverythingAcknowledged) {
  std::vector<JobId> acknowledged;
  for (int i = 0; i < 4; ++i) {
    auto job = master_->Submit(Spec("job-" + std::to_string(i)), "ada");
    ASSERT_TRUE(job.ok()) << job.status().ToString();
    acknowledged.push_back(job->id);
  }
  ASSERT_TRUE(master_->teams().Set(TeamQuota{"vision", 2, std::nullopt}).ok());

  vfs_.SetCapacity(vfs_.BytesUsed());
  // Everything new is written first, so it is refused with the store's error and memory is
  // left as it was.
  ExpectDiskFull(master_->Submit(Spec("refused"), "ada").status());
  EXPECT_EQ(JobIds(), acknowledged);
  NodeInfo node;
  node.id = "node-a";
  node.address = "127.0.0.1";
  node.milli_cpus = 8000;
  node.memory_bytes = 16LL << 30;
  ExpectDiskFull(master_->nodes().Register(node).status());
  EXPECT_TRUE(master_->nodes().List().empty());
  ExpectDiskFull(master_->teams().Set(TeamQuota{"nlp", 1, std::nullopt}).status());
  ExpectDiskFull(master_->teams().Delete("vision"));
  EXPECT_EQ(master_->teams().List().size(), 2u) << "vision and the implicit default team";
  EXPECT_TRUE(fail_stops_.empty()) << "nothing had changed: no reason to stop";

  // A kill changes the job in memory before its write: that write failing stops the master.
  EXPECT_FALSE(master_->Kill(acknowledged[1], "user ada").ok());
  ASSERT_EQ(fail_stops_.size(), 1u);
  EXPECT_THAT(fail_stops_[0].message(), HasSubstr("saving job " + std::to_string(acknowledged[1])));
  EXPECT_THAT(fail_stops_[0].message(), HasSubstr("disk is full"));

  // Restarted on the disk that is still full, it has every acknowledged job as it was
  // acknowledged (the kill never was).
  Start();
  EXPECT_EQ(JobIds(), acknowledged);
  for (JobId id : acknowledged) {
    EXPECT_EQ((*master_->GetJob(id))->state, JobState::kPending) << "job " << id;
  }
  ExpectDiskFull(master_->Submit(Spec("still-refused"), "ada").status());

  // Space freed: work is taken again, and nothing refused took an id.
  vfs_.SetCapacity(-1);
  auto next = master_->Submit(Spec("after"), "ada");
  ASSERT_TRUE(next.ok()) << next.status().ToString();
  EXPECT_EQ(next->id, acknowledged.back() + 1);
  auto killed = master_->Kill(acknowledged[1], "user ada");
  ASSERT_TRUE(killed.ok()) << killed.status().ToString();
  EXPECT_EQ((*killed)->state, JobState::kKilled);
  EXPECT_EQ(fail_stops_.size(), 1u);
}

}  // namespace
}  // namespace cohort::master
