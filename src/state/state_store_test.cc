#include "state/state_store.h"

#include <gtest/gtest.h>
#include <sqlite3.h>
#include <unistd.h>

#include <filesystem>

#include "model/json.h"

namespace cohort::state {
namespace {

namespace fs = std::filesystem;

class SqliteStateStoreTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() /
           ("cohort-state-test-" + std::to_string(getpid()) + "-" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(dir_);
    fs::create_directories(dir_);
    path_ = (dir_ / "cohort.db").string();
  }
  void TearDown() override { fs::remove_all(dir_); }

  std::unique_ptr<StateStore> Open() {
    auto store = OpenSqliteStateStore(path_);
    EXPECT_TRUE(store.ok()) << store.status().ToString();
    return std::move(store).value();
  }

  static Job SampleJob() {
    Job job;
    job.spec.name = "resnet";
    job.spec.team = "vision";
    job.spec.framework = Framework::kPyTorch;
    job.spec.max_runtime = std::chrono::hours(2);
    TaskGroupSpec g;
    g.role = "worker";
    g.replicas = 2;
    g.resources = Resources{2, 4000, 8LL << 30};
    g.command = {"python3", "train.py", "--epochs", "3"};
    g.env = {{"LR", "0.1"}};
    job.spec.tasks.push_back(g);
    job.user = "ada";
    job.submitted_at = FromMicros(1'700'000'000'123'456);
    return job;
  }

  fs::path dir_;
  std::string path_;
};

TEST_F(SqliteStateStoreTest, CreateAssignsIncreasingIds) {
  auto store = Open();
  auto a = store->CreateJob(SampleJob(), {});
  auto b = store->CreateJob(SampleJob(), {});
  ASSERT_TRUE(a.ok() && b.ok());
  EXPECT_EQ(a->id, 1);
  EXPECT_EQ(b->id, 2);
}

TEST_F(SqliteStateStoreTest, JobRoundTripsEveryField) {
  auto store = Open();
  auto created = store->CreateJob(
      SampleJob(), {JobEvent{0, FromMicros(1'700'000'000'123'456), "submitted", "by ada"}});
  ASSERT_TRUE(created.ok()) << created.status().ToString();
  Job job = *created;
  job.state = JobState::kRunning;
  job.attempt = 1;
  job.placed_at = FromMicros(1'700'000'001'000'000);
  job.running_at = FromMicros(1'700'000'001'500'000);
  Task t;
  t.role = "worker";
  t.index = 1;
  t.rank = 1;
  t.resources = Resources{2, 4000, 8LL << 30};
  t.node_id = "node-a";
  t.host = "127.0.0.1";
  t.gpus = {2, 3};
  t.port = 30001;
  t.state = TaskState::kRunning;
  t.pid = 4242;
  t.started_at = job.running_at;
  t.assigned_version = 7;
  job.tasks.push_back(t);
  job.history.push_back(AttemptSummary{0, std::nullopt, std::nullopt, "example"});
  job.version = 9;
  ASSERT_TRUE(store->SaveJob(job, {JobEvent{job.id, *job.running_at, "running", ""}}).ok());

  auto loaded = store->LoadJobs();
  ASSERT_TRUE(loaded.ok()) << loaded.status().ToString();
  ASSERT_EQ(loaded->size(), 1u);
  EXPECT_EQ(ToJson((*loaded)[0]).dump(), ToJson(job).dump());

  auto events = store->LoadEvents(job.id);
  ASSERT_TRUE(events.ok());
  ASSERT_EQ(events->size(), 2u);
  EXPECT_EQ((*events)[0].type, "submitted");
  EXPECT_EQ((*events)[0].message, "by ada");
  EXPECT_EQ((*events)[1].type, "running");
}

TEST_F(SqliteStateStoreTest, SaveOfUnknownJobIsNotFound) {
  auto store = Open();
  Job job = SampleJob();
  job.id = 77;
  Status s = store->SaveJob(job, {});
  EXPECT_EQ(s.code(), StatusCode::kNotFound);
}

TEST_F(SqliteStateStoreTest, EverythingSurvivesReopen) {
  {
    auto store = Open();
    ASSERT_TRUE(store->CreateJob(SampleJob(), {}).ok());
    ASSERT_TRUE(store->CreateJob(SampleJob(), {}).ok());
    Node node;
    node.info.id = "node-a";
    node.info.address = "10.0.0.1";
    node.info.milli_cpus = 16000;
    node.info.memory_bytes = 64LL << 30;
    node.info.gpus.push_back(Gpu{0, "GPU-1", "H100", 80LL << 30, "00000000:01:00.0", 0});
    node.info.gpu_source = "declared";
    node.registered_at = FromMicros(5);
    node.last_seen = FromMicros(6);
    ASSERT_TRUE(store->SaveNode(node).ok());
  }
  auto store = Open();
  auto jobs = store->LoadJobs();
  ASSERT_TRUE(jobs.ok());
  EXPECT_EQ(jobs->size(), 2u);
  // Ids keep counting after a reopen.
  auto third = store->CreateJob(SampleJob(), {});
  ASSERT_TRUE(third.ok());
  EXPECT_EQ(third->id, 3);
  auto nodes = store->LoadNodes();
  ASSERT_TRUE(nodes.ok());
  ASSERT_EQ(nodes->size(), 1u);
  EXPECT_EQ((*nodes)[0].info.id, "node-a");
  EXPECT_EQ((*nodes)[0].info.gpus.at(0).model, "H100");
  EXPECT_EQ((*nodes)[0].state, NodeState::kUnreachable);
  EXPECT_EQ(store->SchemaVersion(), 2);
}

TEST_F(SqliteStateStoreTest, TeamsRoundTripAndSurviveReopen) {
  {
    auto store = Open();
    ASSERT_TRUE(store->SaveTeam(TeamQuota{"vision", 16, 24}).ok());
    ASSERT_TRUE(store->SaveTeam(TeamQuota{"nlp", 8, std::nullopt}).ok());
    ASSERT_TRUE(store->SaveTeam(TeamQuota{"vision", 12, std::nullopt}).ok());  // replaces
  }
  auto store = Open();
  auto teams = store->LoadTeams();
  ASSERT_TRUE(teams.ok());
  ASSERT_EQ(teams->size(), 2u);
  EXPECT_EQ((*teams)[0].name, "nlp");
  EXPECT_EQ((*teams)[0].guaranteed_gpus, 8);
  EXPECT_FALSE((*teams)[0].max_gpus.has_value());
  EXPECT_EQ((*teams)[1].name, "vision");
  EXPECT_EQ((*teams)[1].guaranteed_gpus, 12);
  EXPECT_FALSE((*teams)[1].max_gpus.has_value());
  ASSERT_TRUE(store->DeleteTeam("nlp").ok());
  EXPECT_EQ(store->DeleteTeam("nlp").code(), StatusCode::kNotFound);
  EXPECT_EQ(store->LoadTeams()->size(), 1u);
}

TEST_F(SqliteStateStoreTest, MigratesAVersionOneDatabase) {
  // A database as the first release left it: schema 1, one job.
  sqlite3* db = nullptr;
  ASSERT_EQ(sqlite3_open(path_.c_str(), &db), SQLITE_OK);
  ASSERT_EQ(sqlite3_exec(db,
                         "CREATE TABLE jobs (id INTEGER PRIMARY KEY, name TEXT NOT NULL, team TEXT "
                         "NOT NULL, user TEXT NOT NULL, state TEXT NOT NULL, submitted_at INTEGER "
                         "NOT NULL, record TEXT NOT NULL);"
                         "CREATE TABLE job_events (seq INTEGER PRIMARY KEY AUTOINCREMENT, job_id "
                         "INTEGER NOT NULL REFERENCES jobs(id), time INTEGER NOT NULL, type TEXT "
                         "NOT NULL, message TEXT NOT NULL);"
                         "CREATE TABLE nodes (id TEXT PRIMARY KEY, registered_at INTEGER NOT NULL, "
                         "last_seen INTEGER NOT NULL, record TEXT NOT NULL);"
                         "PRAGMA user_version=1;",
                         nullptr, nullptr, nullptr),
            SQLITE_OK);
  sqlite3_close(db);
  auto store = Open();
  EXPECT_EQ(store->SchemaVersion(), 2);
  EXPECT_TRUE(store->SaveTeam(TeamQuota{"vision", 4, std::nullopt}).ok());
}

TEST_F(SqliteStateStoreTest, UsesWriteAheadLog) {
  auto store = Open();
  sqlite3* db = nullptr;
  ASSERT_EQ(sqlite3_open(path_.c_str(), &db), SQLITE_OK);
  sqlite3_stmt* stmt = nullptr;
  ASSERT_EQ(sqlite3_prepare_v2(db, "PRAGMA journal_mode", -1, &stmt, nullptr), SQLITE_OK);
  ASSERT_EQ(sqlite3_step(stmt), SQLITE_ROW);
  EXPECT_STREQ(reinterpret_cast<const char*>(sqlite3_column_text(stmt, 0)), "wal");
  sqlite3_finalize(stmt);
  sqlite3_close(db);
}

TEST_F(SqliteStateStoreTest, RefusesNewerSchema) {
  { auto store = Open(); }
  sqlite3* db = nullptr;
  ASSERT_EQ(sqlite3_open(path_.c_str(), &db), SQLITE_OK);
  ASSERT_EQ(sqlite3_exec(db, "PRAGMA user_version=99", nullptr, nullptr, nullptr), SQLITE_OK);
  sqlite3_close(db);
  auto store = OpenSqliteStateStore(path_);
  ASSERT_FALSE(store.ok());
  EXPECT_EQ(store.status().code(), StatusCode::kFailedPrecondition);
  EXPECT_NE(store.status().message().find("upgrade cohortd"), std::string::npos);
}

TEST_F(SqliteStateStoreTest, UnwritableLocationIsAnError) {
  auto store = OpenSqliteStateStore((dir_ / "missing" / "dir" / "cohort.db").string());
  ASSERT_FALSE(store.ok());
  EXPECT_EQ(store.status().code(), StatusCode::kInternal);
}

}  // namespace
}  // namespace cohort::state
