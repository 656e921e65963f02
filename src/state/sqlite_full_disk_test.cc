// The SQLite store on a disk that fills up (testing::FaultVfs): a write that does not fit is
// refused with kResourceExhausted naming the database, nothing of it is kept, nothing kept
// before is lost, and once there is room again the same store takes writes.
#include <gtest/gtest.h>
#include <stdlib.h>

#include <filesystem>
#include <string>
#include <vector>

#include "state/state_store.h"
#include "testing/fault_vfs.h"
#include "testing/store_contents.h"

namespace cohort::state {
namespace {

namespace fs = std::filesystem;

Job NewJob(const std::string& name) {
  Job job;
  job.spec.name = name;
  TaskGroupSpec g;
  g.role = "worker";
  g.replicas = 2;
  g.resources = Resources{1, 1000, 1LL << 30};
  g.command = {"python3", "train.py"};
  job.spec.tasks.push_back(g);
  job.user = "ada";
  job.submitted_at = FromMicros(1'700'000'000'000'000);
  return job;
}

// `count` events of about `bytes` each.
std::vector<JobEvent> Events(JobId job, int count, size_t bytes = 40) {
  std::vector<JobEvent> events;
  for (int i = 0; i < count; ++i) {
    events.push_back(JobEvent{job, FromMicros(i), "note", std::string(bytes, 'a' + i % 26)});
  }
  return events;
}

class SqliteFullDiskTest : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string pattern = (fs::temp_directory_path() / "cohort-full-disk-XXXXXX").string();
    ASSERT_NE(mkdtemp(pattern.data()), nullptr);
    dir_ = pattern;
    path_ = (dir_ / "cohort.db").string();
  }
  void TearDown() override { fs::remove_all(dir_); }

  std::unique_ptr<StateStore> Open() {
    auto store = OpenSqliteStateStore(path_);
    EXPECT_TRUE(store.ok()) << store.status().ToString();
    return store.ok() ? std::move(store).value() : nullptr;
  }

  static std::string Contents(StateStore& store) { return cohort::testing::StoreContents(store); }

  void ExpectDiskFull(const Status& s) {
    EXPECT_EQ(s.code(), StatusCode::kResourceExhausted) << s.ToString();
    EXPECT_NE(s.message().find("the state database's disk is full: " + path_), std::string::npos)
        << s.message();
  }

  // Declared first: it must outlive every store opened through it.
  cohort::testing::FaultVfs vfs_;
  fs::path dir_;
  std::string path_;
};

Node NodeNamed(const std::string& id) {
  Node node;
  node.info.id = id;
  node.info.address = "10.0.0.1";
  node.info.milli_cpus = 8000;
  node.info.memory_bytes = 1LL << 30;
  return node;
}

TEST_F(SqliteFullDiskTest, EveryWriteIsRefusedClearlyAndTheStoreTakesWritesOnceThereIsRoom) {
  auto store = Open();
  ASSERT_NE(store, nullptr);
  std::vector<Job> acknowledged;
  for (int i = 0; i < 5; ++i) {
    auto job = store->CreateJob(NewJob("job-" + std::to_string(i)), Events(0, 3));
    ASSERT_TRUE(job.ok()) << job.status().ToString();
    acknowledged.push_back(*job);
  }
  ASSERT_TRUE(store->SaveTeam(TeamQuota{"vision", 4, std::nullopt}).ok());
  ASSERT_TRUE(store->SaveNode(NodeNamed("node-a")).ok());
  const std::string before = Contents(*store);

  vfs_.SetCapacity(vfs_.BytesUsed());  // not one byte more
  ExpectDiskFull(store->CreateJob(NewJob("one-too-many"), Events(0, 3)).status());
  Job changed = acknowledged[2];
  changed.state = JobState::kKilled;
  changed.version = 2;
  ExpectDiskFull(store->SaveJob(changed, Events(changed.id, 2)));
  ExpectDiskFull(store->SaveTeam(TeamQuota{"nlp", 2, 8}));
  ExpectDiskFull(store->DeleteTeam("vision"));
  ExpectDiskFull(store->SaveNode(NodeNamed("node-b")));
  // Reads still work, and show exactly what was acknowledged.
  EXPECT_EQ(Contents(*store), before);

  // Room again: the same store takes writes (no transaction was left open), and the refused
  // create took no id.
  vfs_.SetCapacity(-1);
  auto next = store->CreateJob(NewJob("after"), Events(0, 1));
  ASSERT_TRUE(next.ok()) << next.status().ToString();
  EXPECT_EQ(next->id, 6);
  ASSERT_TRUE(store->SaveJob(changed, Events(changed.id, 2)).ok());
  ASSERT_TRUE(store->DeleteTeam("vision").ok());
  const std::string after = Contents(*store);
  EXPECT_NE(after, before);

  store.reset();
  store = Open();
  ASSERT_NE(store, nullptr);
  EXPECT_EQ(Contents(*store), after);
}

TEST_F(SqliteFullDiskTest, AWriteThatFillsTheDiskPartWayLeavesNothingOfItself) {
  auto store = Open();
  ASSERT_NE(store, nullptr);
  auto created = store->CreateJob(NewJob("big"), Events(0, 2));
  ASSERT_TRUE(created.ok());
  Job job = *created;
  vfs_.SetCapacity(vfs_.BytesUsed() + (256 << 10));
  // Larger than the room left: about 1 MiB, whose pages SQLite writes when it commits; and about
  // 8 MiB, more than its page cache holds, so that it writes pages while still inserting.
  for (int count : {5'000, 40'000}) {
    SCOPED_TRACE(std::to_string(count) + " events");
    const std::string before = Contents(*store);
    Job changed = job;
    changed.state = JobState::kRunning;
    ExpectDiskFull(store->SaveJob(changed, Events(job.id, count, 200)));
    EXPECT_EQ(Contents(*store), before);
    // What fits still goes in: the refused write holds no space that it did not give back.
    job.version += 1;
    Status small = store->SaveJob(job, Events(job.id, 1));
    ASSERT_TRUE(small.ok()) << small.ToString();
    store.reset();
    store = Open();
    ASSERT_NE(store, nullptr);
    auto jobs = store->LoadJobs();
    ASSERT_TRUE(jobs.ok());
    ASSERT_EQ(jobs->size(), 1u);
    EXPECT_EQ(jobs->at(0).version, job.version);
    EXPECT_EQ(jobs->at(0).state, JobState::kPending);
  }
}

}  // namespace
}  // namespace cohort::state
