#include "state/state_store.h"

#include <gtest/gtest.h>
#include <sqlite3.h>
#include <stdlib.h>

#include <filesystem>
#include <string>

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
    EXPECT_EQ(store->SchemaVersion(), 5);
  }
  auto store = Open();
  ASSERT_NE(store, nullptr);
  EXPECT_EQ(store->SchemaVersion(), 5);
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
  EXPECT_EQ(store->SchemaVersion(), 5);
  EXPECT_TRUE(store->SaveTeam(TeamQuota{"vision", 4, std::nullopt}).ok());
  EXPECT_TRUE(store->SaveSecret(Secret{SecretScope::kUser, "ada", "wandb", "v", {}}).ok());
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
