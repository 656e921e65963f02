#include "state/state_store.h"

#include <gtest/gtest.h>
#include <sqlite3.h>
#include <stdlib.h>

#include <filesystem>
#include <string>

#include "model/json.h"
#include "testing/state_store_contract.h"

namespace cohort::state {
namespace {

namespace fs = std::filesystem;

// A directory of its own under the system's temporary directory: tests run in parallel.
fs::path MakeScratchDir() {
  std::string pattern = (fs::temp_directory_path() / "cohort-state-test-XXXXXX").string();
  char* dir = mkdtemp(pattern.data());
  EXPECT_NE(dir, nullptr) << "mkdtemp " << pattern;
  return dir ? fs::path(dir) : fs::path();
}

// The contract's backend: a database file in a scratch directory; reopening it is a restart.
class SqliteBackend : public testing::StateStoreBackend {
 public:
  SqliteBackend() : dir_(MakeScratchDir()) {}
  ~SqliteBackend() override {
    if (!dir_.empty()) fs::remove_all(dir_);
  }
  StatusOr<std::unique_ptr<StateStore>> Open() override {
    return OpenSqliteStateStore((dir_ / "cohort.db").string());
  }

 private:
  fs::path dir_;
};

using testing::StateStoreContract;  // INSTANTIATE_TEST_SUITE_P takes no qualified name
INSTANTIATE_TEST_SUITE_P(Sqlite, StateStoreContract,
                         ::testing::Values(testing::StateStoreContractParam{
                             "Sqlite", [] { return std::make_unique<SqliteBackend>(); }}),
                         testing::StateStoreContractParamName);

// What is SQLite's own: the file, its journal, its schema and migrations.
class SqliteStateStoreTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = MakeScratchDir();
    ASSERT_FALSE(dir_.empty());
    path_ = (dir_ / "cohort.db").string();
  }
  void TearDown() override {
    if (!dir_.empty()) fs::remove_all(dir_);
  }

  std::unique_ptr<StateStore> Open() {
    auto store = OpenSqliteStateStore(path_);
    EXPECT_TRUE(store.ok()) << store.status().ToString();
    return store.ok() ? std::move(store).value() : nullptr;
  }

  fs::path dir_;
  std::string path_;
};

TEST_F(SqliteStateStoreTest, NewDatabaseIsAtTheLatestSchema) {
  {
    auto store = Open();
    ASSERT_NE(store, nullptr);
    EXPECT_EQ(store->SchemaVersion(), 9);
  }
  auto store = Open();
  ASSERT_NE(store, nullptr);
  EXPECT_EQ(store->SchemaVersion(), 9);
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
  EXPECT_EQ(store->SchemaVersion(), 9);
  EXPECT_TRUE(store->SaveTeam(TeamQuota{"vision", 4, std::nullopt}).ok());
  EXPECT_TRUE(store->SaveSecret(Secret{SecretScope::kUser, "ada", "wandb", "v", {}}).ok());
  // Schema 7: the runtime history starts empty (jobs that ended before are not replayed).
  auto history = store->LoadRuntimeHistory();
  ASSERT_TRUE(history.ok()) << history.status().ToString();
  EXPECT_TRUE(history->empty());
}

// Schema 8: the team an admin chose for a user's jobs is kept, and can be cleared.
TEST_F(SqliteStateStoreTest, AUsersDefaultTeamSurvivesAReopen) {
  User ada;
  ada.name = "ada";
  ada.teams = {{"vision", TeamRole::kMember}, {"nlp", TeamRole::kMember}};
  ada.default_team = "vision";
  User bob;
  bob.name = "bob";
  {
    auto store = Open();
    ASSERT_NE(store, nullptr);
    ASSERT_TRUE(store->SaveUser(ada).ok());
    ASSERT_TRUE(store->SaveUser(bob).ok());
  }
  {
    auto store = Open();
    auto users = store->LoadUsers();
    ASSERT_TRUE(users.ok()) << users.status().ToString();
    ASSERT_EQ(users->size(), 2u);
    EXPECT_EQ((*users)[0].default_team, std::optional<std::string>("vision"));
    EXPECT_EQ((*users)[1].default_team, std::nullopt);
    ada.default_team.reset();
    ASSERT_TRUE(store->SaveUser(ada).ok());
  }
  auto users = Open()->LoadUsers();
  ASSERT_TRUE(users.ok());
  EXPECT_EQ((*users)[0].default_team, std::nullopt);
}

// Jobs stored before accounting existed get their ends, attempts and holds from their records.
TEST_F(SqliteStateStoreTest, MigrationToSchemaFiveBackfillsAccountingFromTheRecords) {
  auto seconds = [](int64_t s) { return FromMicros(s * 1'000'000); };
  Job done;
  done.id = 1;
  done.spec.name = "done";
  done.spec.team = "vision";
  TaskGroupSpec g;
  g.role = "worker";
  g.replicas = 2;
  g.resources = Resources{2, 1000, 1LL << 30};
  g.command = {"true"};
  done.spec.tasks.push_back(g);
  done.user = "ada";
  done.submitted_at = seconds(500);
  done.state = JobState::kSucceeded;
  done.attempt = 2;
  done.placed_at = seconds(3000);
  done.finished_at = seconds(5000);
  done.history = {AttemptSummary{1, seconds(1000), seconds(2000), "failed: worker/1", {}},
                  AttemptSummary{2, seconds(3000), seconds(5000), "every task succeeded", {}}};
  for (int i = 0; i < 2; ++i) {
    Task t;
    t.role = "worker";
    t.index = i;
    t.resources = g.resources;
    t.node_id = "a";
    t.state = TaskState::kSucceeded;
    t.finished_at = seconds(4000 + i * 1000);
    done.tasks.push_back(t);
  }
  Job running = done;
  running.id = 2;
  running.state = JobState::kRunning;
  running.attempt = 1;
  running.placed_at = seconds(6000);
  running.finished_at.reset();
  running.history.clear();
  for (auto& t : running.tasks) {
    t.state = TaskState::kRunning;
    t.finished_at.reset();
  }

  sqlite3* db = nullptr;
  ASSERT_EQ(sqlite3_open(path_.c_str(), &db), SQLITE_OK);
  std::string schema3 =
      "CREATE TABLE jobs (id INTEGER PRIMARY KEY, name TEXT NOT NULL, team TEXT NOT NULL, user "
      "TEXT NOT NULL, state TEXT NOT NULL, submitted_at INTEGER NOT NULL, record TEXT NOT NULL);"
      "CREATE TABLE job_events (seq INTEGER PRIMARY KEY AUTOINCREMENT, job_id INTEGER NOT NULL "
      "REFERENCES jobs(id), time INTEGER NOT NULL, type TEXT NOT NULL, message TEXT NOT NULL);"
      "CREATE TABLE nodes (id TEXT PRIMARY KEY, registered_at INTEGER NOT NULL, last_seen "
      "INTEGER NOT NULL, record TEXT NOT NULL, drained INTEGER NOT NULL DEFAULT 0, drain_reason "
      "TEXT NOT NULL DEFAULT '');"
      "CREATE TABLE teams (name TEXT PRIMARY KEY, guaranteed_gpus INTEGER NOT NULL, max_gpus "
      "INTEGER);"
      "PRAGMA user_version=3;";
  ASSERT_EQ(sqlite3_exec(db, schema3.c_str(), nullptr, nullptr, nullptr), SQLITE_OK);
  for (const Job* job : {&done, &running}) {
    sqlite3_stmt* insert = nullptr;
    ASSERT_EQ(sqlite3_prepare_v2(db,
                                 "INSERT INTO jobs (id, name, team, user, state, submitted_at, "
                                 "record) VALUES (?, 'x', 'vision', 'ada', ?, ?, ?)",
                                 -1, &insert, nullptr),
              SQLITE_OK);
    std::string record = ToJson(*job).dump();
    sqlite3_bind_int64(insert, 1, job->id);
    sqlite3_bind_text(insert, 2, JobStateName(job->state), -1, SQLITE_TRANSIENT);
    sqlite3_bind_int64(insert, 3, ToMicros(job->submitted_at));
    sqlite3_bind_text(insert, 4, record.c_str(), -1, SQLITE_TRANSIENT);
    ASSERT_EQ(sqlite3_step(insert), SQLITE_DONE);
    sqlite3_finalize(insert);
  }
  sqlite3_close(db);

  auto store = Open();
  ASSERT_NE(store, nullptr);
  EXPECT_EQ(store->SchemaVersion(), 9);
  std::vector<std::string> holds;
  ASSERT_TRUE(store
                  ->ScanUsage(UsageScan{seconds(0), seconds(100'000), "", ""},
                              [&](const TaskUsage& u) {
                                holds.push_back(fmt::format(
                                    "{}.{} {} {}gpu {}-{}", u.job_id, u.attempt, u.task, u.gpus,
                                    ToMicros(u.start) / 1'000'000,
                                    u.end ? std::to_string(ToMicros(*u.end) / 1'000'000) : "open"));
                              })
                  .ok());
  std::sort(holds.begin(), holds.end());
  EXPECT_EQ(holds, (std::vector<std::string>{
                       "1.1 worker/0 2gpu 1000-2000",  // from the spec: the attempt's tasks
                       "1.1 worker/1 2gpu 1000-2000",  // are gone
                       "1.2 worker/0 2gpu 3000-4000",  // from the tasks, with their own ends
                       "1.2 worker/1 2gpu 3000-5000",
                       "2.1 worker/0 2gpu 6000-open",
                       "2.1 worker/1 2gpu 6000-open",
                   }));
  std::vector<std::string> milestones;
  ASSERT_TRUE(store
                  ->ScanMilestones(UsageScan{seconds(0), seconds(100'000), "", ""},
                                   [&](const JobMilestone& m) {
                                     milestones.push_back(fmt::format(
                                         "{} {} {} {}", static_cast<int>(m.kind), m.job_id,
                                         m.attempt, ToMicros(m.at) / 1'000'000));
                                   })
                  .ok());
  std::sort(milestones.begin(), milestones.end());
  EXPECT_EQ(milestones, (std::vector<std::string>{"0 1 0 500", "0 2 0 500", "1 1 1 1000",
                                                  "1 1 2 3000", "1 2 1 6000", "2 1 0 5000"}));
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
