#include <errno.h>
#include <fmt/format.h>
#include <sqlite3.h>

#include <string>
#include <utility>
#include <vector>

#include "state/records.h"
#include "state/state_store.h"

namespace cohort::state {
namespace {

// Each entry brings the schema from version i to i+1. Never edit a released entry: add one.
const std::vector<std::string>& Migrations() {
  static const std::vector<std::string> kMigrations = {
      R"sql(
      CREATE TABLE jobs (
        id INTEGER PRIMARY KEY,
        name TEXT NOT NULL,
        team TEXT NOT NULL,
        user TEXT NOT NULL,
        state TEXT NOT NULL,
        submitted_at INTEGER NOT NULL,
        record TEXT NOT NULL            -- the job's JSON form (model/json.h)
      );
      CREATE INDEX jobs_by_state ON jobs(state);
      CREATE TABLE job_events (
        seq INTEGER PRIMARY KEY AUTOINCREMENT,
        job_id INTEGER NOT NULL REFERENCES jobs(id),
        time INTEGER NOT NULL,
        type TEXT NOT NULL,
        message TEXT NOT NULL
      );
      CREATE INDEX job_events_by_job ON job_events(job_id, seq);
      CREATE TABLE nodes (
        id TEXT PRIMARY KEY,
        registered_at INTEGER NOT NULL,
        last_seen INTEGER NOT NULL,
        record TEXT NOT NULL            -- the node's JSON form
      );
      )sql",
      R"sql(
      CREATE TABLE teams (
        name TEXT PRIMARY KEY,
        guaranteed_gpus INTEGER NOT NULL,
        max_gpus INTEGER              -- NULL: no limit
      );
      )sql",
      R"sql(
      ALTER TABLE nodes ADD COLUMN drained INTEGER NOT NULL DEFAULT 0;
      ALTER TABLE nodes ADD COLUMN drain_reason TEXT NOT NULL DEFAULT '';
      )sql",
      R"sql(
      CREATE TABLE users (
        name TEXT PRIMARY KEY,
        admin INTEGER NOT NULL,
        teams TEXT NOT NULL,            -- {"team": "role", ...} (state/records.h)
        uid INTEGER,                    -- NULL: the Unix account named like the user
        gid INTEGER,
        created_at INTEGER NOT NULL
      );
      CREATE TABLE tokens (
        id TEXT PRIMARY KEY,
        kind TEXT NOT NULL,             -- user, node or join
        subject TEXT NOT NULL,
        description TEXT NOT NULL,
        hash TEXT NOT NULL,             -- SHA-256 of the token; the token itself is never kept
        created_at INTEGER NOT NULL,
        expires_at INTEGER,
        revoked_at INTEGER
      );
      )sql",
      R"sql(
      CREATE TABLE secrets (
        scope TEXT NOT NULL,            -- user or team
        owner TEXT NOT NULL,            -- the user or the team
        name TEXT NOT NULL,
        value TEXT NOT NULL,            -- in plaintext: the file is the master's alone (0600)
        updated_at INTEGER NOT NULL,
        PRIMARY KEY (scope, owner, name)
      );
      )sql",
  };
  return kMigrations;
}

class Statement {
 public:
  Statement(sqlite3* db, const char* sql) {
    rc_ = sqlite3_prepare_v2(db, sql, -1, &stmt_, nullptr);
  }
  ~Statement() { sqlite3_finalize(stmt_); }
  Statement(const Statement&) = delete;
  Statement& operator=(const Statement&) = delete;

  bool prepared() const { return rc_ == SQLITE_OK; }
  // For the next row of an insert: the statement runs again with new values.
  void Reset() {
    sqlite3_reset(stmt_);
    sqlite3_clear_bindings(stmt_);
  }
  void Bind(int i, int64_t v) { sqlite3_bind_int64(stmt_, i, v); }
  void Bind(int i, const std::string& v) {
    sqlite3_bind_text(stmt_, i, v.data(), static_cast<int>(v.size()), SQLITE_TRANSIENT);
  }
  void BindNull(int i) { sqlite3_bind_null(stmt_, i); }
  int Step() { return sqlite3_step(stmt_); }
  bool IsNull(int col) { return sqlite3_column_type(stmt_, col) == SQLITE_NULL; }
  int64_t Int(int col) { return sqlite3_column_int64(stmt_, col); }
  std::string Text(int col) {
    const unsigned char* p = sqlite3_column_text(stmt_, col);
    return p ? std::string(reinterpret_cast<const char*>(p),
                           static_cast<size_t>(sqlite3_column_bytes(stmt_, col)))
             : std::string();
  }

 private:
  sqlite3_stmt* stmt_ = nullptr;
  int rc_;
};

void BindOptional(Statement& st, int i, const std::optional<int64_t>& v) {
  if (v) {
    st.Bind(i, *v);
  } else {
    st.BindNull(i);
  }
}
void BindOptional(Statement& st, int i, const std::optional<Timestamp>& v) {
  BindOptional(st, i, v ? std::optional<int64_t>(ToMicros(*v)) : std::nullopt);
}

class SqliteStateStore final : public StateStore {
 public:
  SqliteStateStore(sqlite3* db, std::string path) : db_(db), path_(std::move(path)) {}
  ~SqliteStateStore() override { sqlite3_close(db_); }

  Status Init() {
    {
      // A file system that cannot hold a WAL leaves the old mode in place without an error.
      Statement wal(db_, "PRAGMA journal_mode=WAL");
      if (!wal.prepared() || wal.Step() != SQLITE_ROW) {
        return Error("turning on the write-ahead log");
      }
      if (wal.Text(0) != "wal") {
        return Status::FailedPrecondition(fmt::format(
            "{}: cannot keep a write-ahead log there (journal mode stays {}); put the data "
            "directory on a local file system",
            path_, wal.Text(0)));
      }
    }
    // FULL: every commit's WAL frames are fsynced before the call returns, so an acknowledged
    // write survives a power cut too, not only a crash of the master (NORMAL would survive the
    // crash but could lose the last commits to a power cut). docs/architecture.md, "Durability".
    COHORT_RETURN_IF_ERROR(Exec("PRAGMA synchronous=FULL", "setting synchronous=FULL"));
    COHORT_RETURN_IF_ERROR(Exec("PRAGMA foreign_keys=ON", "turning on foreign keys"));
    sqlite3_busy_timeout(db_, 5000);
    Statement v(db_, "PRAGMA user_version");
    if (!v.prepared() || v.Step() != SQLITE_ROW) return Error("reading the schema version");
    int version = static_cast<int>(v.Int(0));
    const auto& migrations = Migrations();
    if (version > static_cast<int>(migrations.size())) {
      return Status::FailedPrecondition(fmt::format(
          "{}: schema version {} is newer than this cohortd knows ({}); upgrade cohortd", path_,
          version, migrations.size()));
    }
    for (size_t i = static_cast<size_t>(version); i < migrations.size(); ++i) {
      std::string what = fmt::format("migrating to schema {}", i + 1);
      COHORT_RETURN_IF_ERROR(Exec("BEGIN IMMEDIATE", what));
      Status s = Exec(migrations[i].c_str(), what);
      if (s.ok()) s = Exec(fmt::format("PRAGMA user_version={}", i + 1).c_str(), what);
      if (s.ok()) s = Exec("COMMIT", what);
      COHORT_RETURN_IF_ERROR(RollBackIfFailed(std::move(s)));
    }
    schema_version_ = static_cast<int>(migrations.size());
    return Status::Ok();
  }

  StatusOr<Job> CreateJob(Job job, std::vector<JobEvent> events) override {
    COHORT_RETURN_IF_ERROR(Exec("BEGIN IMMEDIATE", "creating a job"));
    Status s = [&]() -> Status {
      Statement next(db_, "SELECT COALESCE(MAX(id), 0) + 1 FROM jobs");
      if (!next.prepared() || next.Step() != SQLITE_ROW) return Error("allocating a job id");
      job.id = next.Int(0);
      // The caller cannot know the id yet: the events are the new job's.
      for (auto& e : events) e.job_id = job.id;
      COHORT_RETURN_IF_ERROR(CheckEvents(job.id, events));
      COHORT_ASSIGN_OR_RETURN(std::string record, EncodeJobRecord(job));
      Statement insert(db_,
                       "INSERT INTO jobs (id, name, team, user, state, submitted_at, record) "
                       "VALUES (?, ?, ?, ?, ?, ?, ?)");
      if (!insert.prepared()) return Error("preparing a job insert");
      insert.Bind(1, job.id);
      insert.Bind(2, job.spec.name);
      insert.Bind(3, job.spec.team);
      insert.Bind(4, job.user);
      insert.Bind(5, std::string(JobStateName(job.state)));
      insert.Bind(6, ToMicros(job.submitted_at));
      insert.Bind(7, record);
      if (insert.Step() != SQLITE_DONE) return Error("inserting a job");
      return InsertEvents(events);
    }();
    return Finish(std::move(s), std::move(job));
  }

  Status SaveJob(const Job& job, const std::vector<JobEvent>& events) override {
    // Refused before the transaction: nothing to roll back.
    COHORT_RETURN_IF_ERROR(CheckEvents(job.id, events));
    COHORT_ASSIGN_OR_RETURN(std::string record, EncodeJobRecord(job));
    COHORT_RETURN_IF_ERROR(Exec("BEGIN IMMEDIATE", "saving a job"));
    Status s = [&]() -> Status {
      Statement update(db_, "UPDATE jobs SET state = ?, record = ? WHERE id = ?");
      if (!update.prepared()) return Error("preparing a job update");
      update.Bind(1, std::string(JobStateName(job.state)));
      update.Bind(2, record);
      update.Bind(3, job.id);
      if (update.Step() != SQLITE_DONE) return Error("updating a job");
      if (sqlite3_changes(db_) == 0) return Status::NotFound(fmt::format("job {}", job.id));
      return InsertEvents(events);
    }();
    return Finish(std::move(s), true).status();
  }

  StatusOr<std::vector<Job>> LoadJobs() override {
    Statement q(db_, "SELECT record FROM jobs ORDER BY id");
    if (!q.prepared()) return Error("preparing the job query");
    std::vector<Job> jobs;
    int rc;
    while ((rc = q.Step()) == SQLITE_ROW) {
      COHORT_ASSIGN_OR_RETURN(Job job, DecodeJobRecord(q.Text(0)));
      jobs.push_back(std::move(job));
    }
    if (rc != SQLITE_DONE) return Error("reading jobs");
    return jobs;
  }

  StatusOr<std::vector<JobEvent>> LoadEvents(JobId job) override {
    Statement q(db_, "SELECT time, type, message FROM job_events WHERE job_id = ? ORDER BY seq");
    if (!q.prepared()) return Error("preparing the event query");
    q.Bind(1, job);
    std::vector<JobEvent> events;
    int rc;
    while ((rc = q.Step()) == SQLITE_ROW) {
      events.push_back(JobEvent{job, FromMicros(q.Int(0)), q.Text(1), q.Text(2)});
    }
    if (rc != SQLITE_DONE) return Error("reading events");
    return events;
  }

  Status SaveTeam(const TeamQuota& team) override {
    Statement upsert(db_,
                     "INSERT INTO teams (name, guaranteed_gpus, max_gpus) VALUES (?, ?, ?) "
                     "ON CONFLICT(name) DO UPDATE SET guaranteed_gpus = excluded.guaranteed_gpus, "
                     "max_gpus = excluded.max_gpus");
    if (!upsert.prepared()) return Error("preparing a team upsert");
    upsert.Bind(1, team.name);
    upsert.Bind(2, team.guaranteed_gpus);
    if (team.max_gpus) {
      upsert.Bind(3, *team.max_gpus);
    } else {
      upsert.BindNull(3);
    }
    if (upsert.Step() != SQLITE_DONE) return Error("saving a team");
    return Status::Ok();
  }

  Status DeleteTeam(const std::string& name) override {
    Statement del(db_, "DELETE FROM teams WHERE name = ?");
    if (!del.prepared()) return Error("preparing a team delete");
    del.Bind(1, name);
    if (del.Step() != SQLITE_DONE) return Error("deleting a team");
    if (sqlite3_changes(db_) == 0) return Status::NotFound(fmt::format("team {}", name));
    return Status::Ok();
  }

  StatusOr<std::vector<TeamQuota>> LoadTeams() override {
    Statement q(db_, "SELECT name, guaranteed_gpus, max_gpus FROM teams ORDER BY name");
    if (!q.prepared()) return Error("preparing the team query");
    std::vector<TeamQuota> teams;
    int rc;
    while ((rc = q.Step()) == SQLITE_ROW) {
      TeamQuota t;
      t.name = q.Text(0);
      t.guaranteed_gpus = q.Int(1);
      if (!q.IsNull(2)) t.max_gpus = q.Int(2);
      teams.push_back(std::move(t));
    }
    if (rc != SQLITE_DONE) return Error("reading teams");
    return teams;
  }

  Status SaveUser(const User& user) override {
    COHORT_ASSIGN_OR_RETURN(std::string teams, EncodeUserTeams(user));
    Statement upsert(db_,
                     "INSERT INTO users (name, admin, teams, uid, gid, created_at) "
                     "VALUES (?, ?, ?, ?, ?, ?) "
                     "ON CONFLICT(name) DO UPDATE SET admin = excluded.admin, "
                     "teams = excluded.teams, uid = excluded.uid, gid = excluded.gid");
    if (!upsert.prepared()) return Error("preparing a user upsert");
    upsert.Bind(1, user.name);
    upsert.Bind(2, user.admin ? 1 : 0);
    upsert.Bind(3, teams);
    BindOptional(upsert, 4, user.uid);
    BindOptional(upsert, 5, user.gid);
    upsert.Bind(6, ToMicros(user.created_at));
    if (upsert.Step() != SQLITE_DONE) return Error("saving a user");
    return Status::Ok();
  }

  Status DeleteUser(const std::string& name) override {
    Statement del(db_, "DELETE FROM users WHERE name = ?");
    if (!del.prepared()) return Error("preparing a user delete");
    del.Bind(1, name);
    if (del.Step() != SQLITE_DONE) return Error("deleting a user");
    if (sqlite3_changes(db_) == 0) {
      return Status::NotFound(fmt::format("user {} does not exist", name));
    }
    return Status::Ok();
  }

  StatusOr<std::vector<User>> LoadUsers() override {
    Statement q(db_, "SELECT name, admin, teams, uid, gid, created_at FROM users ORDER BY name");
    if (!q.prepared()) return Error("preparing the user query");
    std::vector<User> users;
    int rc;
    while ((rc = q.Step()) == SQLITE_ROW) {
      User u;
      u.name = q.Text(0);
      u.admin = q.Int(1) != 0;
      COHORT_ASSIGN_OR_RETURN(u.teams, DecodeUserTeams(q.Text(2)));
      if (!q.IsNull(3)) u.uid = q.Int(3);
      if (!q.IsNull(4)) u.gid = q.Int(4);
      u.created_at = FromMicros(q.Int(5));
      users.push_back(std::move(u));
    }
    if (rc != SQLITE_DONE) return Error("reading users");
    return users;
  }

  Status SaveToken(const TokenRecord& token) override {
    Statement upsert(db_,
                     "INSERT INTO tokens (id, kind, subject, description, hash, created_at, "
                     "expires_at, revoked_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?) "
                     "ON CONFLICT(id) DO UPDATE SET kind = excluded.kind, "
                     "subject = excluded.subject, description = excluded.description, "
                     "hash = excluded.hash, expires_at = excluded.expires_at, "
                     "revoked_at = excluded.revoked_at");
    if (!upsert.prepared()) return Error("preparing a token upsert");
    upsert.Bind(1, token.id);
    upsert.Bind(2, std::string(TokenKindName(token.kind)));
    upsert.Bind(3, token.subject);
    upsert.Bind(4, token.description);
    upsert.Bind(5, token.hash);
    upsert.Bind(6, ToMicros(token.created_at));
    BindOptional(upsert, 7, token.expires_at);
    BindOptional(upsert, 8, token.revoked_at);
    if (upsert.Step() != SQLITE_DONE) return Error("saving a token");
    return Status::Ok();
  }

  StatusOr<std::vector<TokenRecord>> LoadTokens() override {
    Statement q(db_,
                "SELECT id, kind, subject, description, hash, created_at, expires_at, "
                "revoked_at FROM tokens ORDER BY id");
    if (!q.prepared()) return Error("preparing the token query");
    std::vector<TokenRecord> tokens;
    int rc;
    while ((rc = q.Step()) == SQLITE_ROW) {
      TokenRecord t;
      t.id = q.Text(0);
      auto kind = ParseTokenKind(q.Text(1));
      if (!kind) {
        return Status::Internal(
            fmt::format("{}: token {} has an unknown kind \"{}\"", path_, t.id, q.Text(1)));
      }
      t.kind = *kind;
      t.subject = q.Text(2);
      t.description = q.Text(3);
      t.hash = q.Text(4);
      t.created_at = FromMicros(q.Int(5));
      if (!q.IsNull(6)) t.expires_at = FromMicros(q.Int(6));
      if (!q.IsNull(7)) t.revoked_at = FromMicros(q.Int(7));
      tokens.push_back(std::move(t));
    }
    if (rc != SQLITE_DONE) return Error("reading tokens");
    return tokens;
  }

  Status SaveSecret(const Secret& secret) override {
    COHORT_RETURN_IF_ERROR(CheckSecret(secret));
    Statement upsert(db_,
                     "INSERT INTO secrets (scope, owner, name, value, updated_at) "
                     "VALUES (?, ?, ?, ?, ?) ON CONFLICT(scope, owner, name) DO UPDATE SET "
                     "value = excluded.value, updated_at = excluded.updated_at");
    if (!upsert.prepared()) return Error("preparing a secret upsert");
    upsert.Bind(1, std::string(SecretScopeName(secret.scope)));
    upsert.Bind(2, secret.owner);
    upsert.Bind(3, secret.name);
    upsert.Bind(4, secret.value);
    upsert.Bind(5, ToMicros(secret.updated_at));
    if (upsert.Step() != SQLITE_DONE) return Error("saving a secret");
    return Status::Ok();
  }

  Status DeleteSecret(SecretScope scope, const std::string& owner,
                      const std::string& name) override {
    Statement del(db_, "DELETE FROM secrets WHERE scope = ? AND owner = ? AND name = ?");
    if (!del.prepared()) return Error("preparing a secret delete");
    del.Bind(1, std::string(SecretScopeName(scope)));
    del.Bind(2, owner);
    del.Bind(3, name);
    if (del.Step() != SQLITE_DONE) return Error("deleting a secret");
    if (sqlite3_changes(db_) == 0) {
      return Status::NotFound(
          fmt::format("{} {} has no secret {}", SecretScopeName(scope), owner, name));
    }
    return Status::Ok();
  }

  StatusOr<std::vector<Secret>> LoadSecrets() override {
    // DESC: "user" sorts after "team", and users' secrets come first.
    Statement q(db_,
                "SELECT scope, owner, name, value, updated_at FROM secrets "
                "ORDER BY scope DESC, owner, name");
    if (!q.prepared()) return Error("preparing the secret query");
    std::vector<Secret> secrets;
    int rc;
    while ((rc = q.Step()) == SQLITE_ROW) {
      Secret secret;
      auto scope = ParseSecretScope(q.Text(0));
      if (!scope) {
        return Status::Internal(
            fmt::format("{}: a secret has an unknown scope \"{}\"", path_, q.Text(0)));
      }
      secret.scope = *scope;
      secret.owner = q.Text(1);
      secret.name = q.Text(2);
      secret.value = q.Text(3);
      secret.updated_at = FromMicros(q.Int(4));
      secrets.push_back(std::move(secret));
    }
    if (rc != SQLITE_DONE) return Error("reading secrets");
    return secrets;
  }

  Status SaveNode(const Node& node) override {
    COHORT_ASSIGN_OR_RETURN(std::string record, EncodeNodeRecord(node.info));
    Statement upsert(db_,
                     "INSERT INTO nodes (id, registered_at, last_seen, record, drained, "
                     "drain_reason) VALUES (?, ?, ?, ?, ?, ?) "
                     "ON CONFLICT(id) DO UPDATE SET registered_at = excluded.registered_at, "
                     "last_seen = excluded.last_seen, record = excluded.record, "
                     "drained = excluded.drained, drain_reason = excluded.drain_reason");
    if (!upsert.prepared()) return Error("preparing a node upsert");
    upsert.Bind(1, node.info.id);
    upsert.Bind(2, ToMicros(node.registered_at));
    upsert.Bind(3, ToMicros(node.last_seen));
    upsert.Bind(4, record);
    upsert.Bind(5, node.drained ? 1 : 0);
    upsert.Bind(6, node.drain_reason);
    if (upsert.Step() != SQLITE_DONE) return Error("saving a node");
    return Status::Ok();
  }

  Status DeleteNode(const std::string& id) override {
    Statement del(db_, "DELETE FROM nodes WHERE id = ?");
    if (!del.prepared()) return Error("preparing a node delete");
    del.Bind(1, id);
    if (del.Step() != SQLITE_DONE) return Error("deleting a node");
    if (sqlite3_changes(db_) == 0) {
      return Status::NotFound(fmt::format("node {} does not exist", id));
    }
    return Status::Ok();
  }

  StatusOr<std::vector<Node>> LoadNodes() override {
    Statement q(
        db_,
        "SELECT registered_at, last_seen, record, drained, drain_reason FROM nodes ORDER BY id");
    if (!q.prepared()) return Error("preparing the node query");
    std::vector<Node> nodes;
    int rc;
    while ((rc = q.Step()) == SQLITE_ROW) {
      Node node;
      COHORT_ASSIGN_OR_RETURN(node.info, DecodeNodeRecord(q.Text(2)));
      node.registered_at = FromMicros(q.Int(0));
      node.last_seen = FromMicros(q.Int(1));
      node.drained = q.Int(3) != 0;
      node.drain_reason = q.Text(4);
      node.state = NodeState::kUnreachable;  // until it syncs again
      nodes.push_back(std::move(node));
    }
    if (rc != SQLITE_DONE) return Error("reading nodes");
    return nodes;
  }

  int SchemaVersion() const override { return schema_version_; }

 private:
  // `what` says what the statement was for, in the error.
  Status Exec(const char* sql, const std::string& what) {
    char* err = nullptr;
    int rc = sqlite3_exec(db_, sql, nullptr, nullptr, &err);
    std::string message = err ? err : sqlite3_errmsg(db_);
    sqlite3_free(err);
    if (rc == SQLITE_OK) return Status::Ok();
    return ErrorStatus(what, message);
  }

  Status Error(const std::string& what) { return ErrorStatus(what, sqlite3_errmsg(db_)); }

  // A full disk is the one failure the master's user can do something about, so it is told
  // apart: SQLite says SQLITE_FULL where the OS refused a write for lack of space part way, but
  // an I/O error where it refused it outright, with the OS's errno kept aside.
  Status ErrorStatus(const std::string& what, const std::string& message) {
    int code = sqlite3_extended_errcode(db_);
    int os_error = sqlite3_system_errno(db_);
    bool full = (code & 0xff) == SQLITE_FULL ||
                ((code & 0xff) == SQLITE_IOERR &&
                 (os_error == ENOSPC || os_error == EDQUOT || os_error == EFBIG));
    if (full) {
      return Status::ResourceExhausted(fmt::format(
          "the state database's disk is full: {}: {}: {}; free space there (until then nothing "
          "new is stored; what was stored before is kept)",
          path_, what, message));
    }
    return Status::Internal(fmt::format("sqlite: {}: {}: {}", path_, what, message));
  }

  Status InsertEvents(const std::vector<JobEvent>& events) {
    if (events.empty()) return Status::Ok();
    Statement insert(db_,
                     "INSERT INTO job_events (job_id, time, type, message) VALUES (?, ?, ?, ?)");
    if (!insert.prepared()) return Error("preparing an event insert");
    for (const auto& e : events) {
      insert.Reset();
      insert.Bind(1, e.job_id);
      insert.Bind(2, ToMicros(e.time));
      insert.Bind(3, e.type);
      insert.Bind(4, e.message);
      if (insert.Step() != SQLITE_DONE) return Error("inserting an event");
    }
    return Status::Ok();
  }

  // Commits if `s` is OK, rolls back otherwise.
  template <typename T>
  StatusOr<T> Finish(Status s, T value) {
    if (s.ok()) s = Exec("COMMIT", "committing");
    COHORT_RETURN_IF_ERROR(RollBackIfFailed(std::move(s)));
    return value;
  }

  // After a failure inside a transaction, makes sure none is left open: one left open would
  // refuse every later BEGIN, so the store would never take a write again even once the disk
  // has room. SQLite rolls back by itself after some errors (SQLITE_FULL, I/O errors), not
  // after others.
  Status RollBackIfFailed(Status s) {
    if (s.ok() || sqlite3_get_autocommit(db_)) return s;
    Status rollback = Exec("ROLLBACK", "rolling back");
    if (!rollback.ok() && !sqlite3_get_autocommit(db_)) {
      return Status::Internal(fmt::format("{}; then {}", s.message(), rollback.message()));
    }
    return s;
  }

  sqlite3* db_;
  std::string path_;
  int schema_version_ = 0;
};

}  // namespace

StatusOr<std::unique_ptr<StateStore>> OpenSqliteStateStore(const std::string& path) {
  sqlite3* db = nullptr;
  int rc = sqlite3_open_v2(
      path.c_str(), &db, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_NOMUTEX, nullptr);
  if (rc != SQLITE_OK) {
    std::string message = db ? sqlite3_errmsg(db) : sqlite3_errstr(rc);
    sqlite3_close(db);
    return Status::Internal(fmt::format("opening {}: {}", path, message));
  }
  auto store = std::make_unique<SqliteStateStore>(db, path);
  COHORT_RETURN_IF_ERROR(store->Init());
  return std::unique_ptr<StateStore>(std::move(store));
}

}  // namespace cohort::state
