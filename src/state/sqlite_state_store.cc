#include <errno.h>
#include <fmt/format.h>
#include <sqlite3.h>

#include <algorithm>
#include <string>
#include <utility>
#include <vector>

#include "state/records.h"
#include "state/sqlite_db.h"
#include "state/state_store.h"

namespace cohort::state {
namespace {

// Each entry brings the schema from version i to i+1. Never edit a released entry: add one.
constexpr int kUsageSchema = 5;  // the migration that adds accounting
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
      // Accounting and the audit log (state/usage.h, state/audit.h). Filled for the jobs
      // already stored by BackfillUsage, in the same transaction.
      R"sql(
      ALTER TABLE jobs ADD COLUMN finished_at INTEGER;  -- NULL until it ends
      CREATE INDEX jobs_by_submission ON jobs(submitted_at);
      CREATE INDEX jobs_by_end ON jobs(finished_at);
      CREATE TABLE job_attempts (
        job_id INTEGER NOT NULL REFERENCES jobs(id),
        attempt INTEGER NOT NULL,
        started_at INTEGER NOT NULL,
        PRIMARY KEY (job_id, attempt)
      );
      CREATE INDEX job_attempts_by_start ON job_attempts(started_at);
      CREATE TABLE task_usage (
        job_id INTEGER NOT NULL REFERENCES jobs(id),
        attempt INTEGER NOT NULL,
        task TEXT NOT NULL,
        team TEXT NOT NULL,
        user TEXT NOT NULL,
        gpus INTEGER NOT NULL,
        milli_cpus INTEGER NOT NULL,
        start_at INTEGER NOT NULL,
        end_at INTEGER,                 -- NULL while the task holds its resources
        PRIMARY KEY (job_id, attempt, task, start_at)
      );
      -- A range of time is an index range: holds that ended after its start, and open ones.
      CREATE INDEX task_usage_by_end ON task_usage(end_at);
      CREATE TABLE audit (
        seq INTEGER PRIMARY KEY AUTOINCREMENT,
        time INTEGER NOT NULL,
        user TEXT NOT NULL,
        remote TEXT NOT NULL,
        method TEXT NOT NULL,
        path TEXT NOT NULL,
        target TEXT NOT NULL,
        status INTEGER,                 -- NULL: the call's outcome was never recorded
        outcome TEXT NOT NULL
      );
      CREATE INDEX audit_by_time ON audit(time);
      CREATE INDEX audit_by_user ON audit(user, time);
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
      // The runtime history of ended jobs (scheduler/runtime_history.h): one row per key at
      // every level, at most RuntimeHistory::kMaxKeys of them, written with the job's end.
      R"sql(
      CREATE TABLE runtime_history (
        key TEXT PRIMARY KEY,           -- "t=vision|u=ada|n=train|g=8", ..., "g=8", "*"
        samples INTEGER NOT NULL,       -- ended jobs behind it
        mean_seconds REAL NOT NULL,     -- their mean GPU time (the mean forgets: kWindow)
        last_used INTEGER NOT NULL      -- the history's counter at its last change
      );
      -- Past the cap, the rows least recently changed are deleted: an index range.
      CREATE INDEX runtime_history_by_use ON runtime_history(last_used);
      )sql",
      R"sql(
      ALTER TABLE users ADD COLUMN default_team TEXT;  -- NULL: auth::TeamForJobs chooses
      -- cohort audit --job: one job's entries are an index range, however long the log.
      CREATE INDEX audit_by_target ON audit(target, time);
      )sql",
      // Sweeps (docs/sweeps.md): the record is the master's (master/sweeps.h); its trials are
      // jobs, written with it in one transaction.
      R"sql(
      CREATE TABLE sweeps (
        id INTEGER PRIMARY KEY,
        name TEXT NOT NULL,
        team TEXT NOT NULL,
        user TEXT NOT NULL,
        state TEXT NOT NULL,
        created_at INTEGER NOT NULL,
        finished_at INTEGER,            -- NULL until it ends
        record TEXT NOT NULL            -- the spec, the searcher's state, the trials
      );
      )sql",
  };
  return kMigrations;
}

class SqliteStateStore final : public StateStore {
 public:
  SqliteStateStore(sqlite3* db, std::string path) : db_(db), path_(std::move(path)) {}
  ~SqliteStateStore() override { sqlite3_close(db_); }

  Status Init() {
    // FULL: every commit's WAL frames are fsynced before the call returns, so an acknowledged
    // write survives a power cut too, not only a crash of the master (NORMAL would survive the
    // crash but could lose the last commits to a power cut). docs/architecture.md, "Durability".
    COHORT_RETURN_IF_ERROR(Exec("PRAGMA synchronous=FULL", "setting synchronous=FULL"));
    COHORT_RETURN_IF_ERROR(Exec("PRAGMA foreign_keys=ON", "turning on foreign keys"));
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
      if (s.ok() && i + 1 == kUsageSchema) s = BackfillUsage();
      if (s.ok()) s = Exec(fmt::format("PRAGMA user_version={}", i + 1).c_str(), what);
      if (s.ok()) s = Exec("COMMIT", what);
      COHORT_RETURN_IF_ERROR(RollBackIfFailed(std::move(s)));
    }
    schema_version_ = static_cast<int>(migrations.size());
    return Status::Ok();
  }

  StatusOr<Job> CreateJob(Job job, std::vector<JobEvent> events) override {
    COHORT_RETURN_IF_ERROR(BeginWrite("creating a job"));
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
      COHORT_RETURN_IF_ERROR(IndexJob(job));
      return InsertEvents(events);
    }();
    return Finish(std::move(s), std::move(job));
  }

  using StateStore::SaveJob;
  Status SaveJob(const Job& job, const std::vector<JobEvent>& events,
                 const std::vector<TaskUsage>& usage,
                 const RuntimeHistoryChange& history) override {
    // Refused before the transaction: nothing to roll back.
    COHORT_RETURN_IF_ERROR(CheckEvents(job.id, events));
    COHORT_RETURN_IF_ERROR(CheckUsage(job.id, usage));
    COHORT_RETURN_IF_ERROR(CheckHistoryChange(history));
    COHORT_ASSIGN_OR_RETURN(std::string record, EncodeJobRecord(job));
    COHORT_RETURN_IF_ERROR(BeginWrite("saving a job"));
    Status s = [&]() -> Status {
      Statement update(db_, "UPDATE jobs SET state = ?, record = ? WHERE id = ?");
      if (!update.prepared()) return Error("preparing a job update");
      update.Bind(1, std::string(JobStateName(job.state)));
      update.Bind(2, record);
      update.Bind(3, job.id);
      if (update.Step() != SQLITE_DONE) return Error("updating a job");
      if (sqlite3_changes(db_) == 0) return Status::NotFound(fmt::format("job {}", job.id));
      COHORT_RETURN_IF_ERROR(IndexJob(job));
      COHORT_RETURN_IF_ERROR(WriteUsage(usage));
      COHORT_RETURN_IF_ERROR(WriteHistory(history));
      return InsertEvents(events);
    }();
    return Finish(std::move(s), true).status();
  }

  StatusOr<std::vector<RuntimeHistoryRow>> LoadRuntimeHistory() override {
    Statement q(db_,
                "SELECT key, samples, mean_seconds, last_used FROM runtime_history ORDER BY key");
    if (!q.prepared()) return Error("preparing the runtime history query");
    std::vector<RuntimeHistoryRow> rows;
    int rc;
    while ((rc = q.Step()) == SQLITE_ROW) {
      rows.push_back(RuntimeHistoryRow{q.Text(0), q.Int(1), q.Double(2), q.Int(3)});
    }
    if (rc != SQLITE_DONE) return Error("reading the runtime history");
    return rows;
  }

  Status ScanUsage(const UsageScan& scan,
                   const std::function<void(const TaskUsage&)>& hold) override {
    // Two index ranges of task_usage_by_end: holds that ended after `since`, and open ones.
    Statement q(db_,
                "SELECT job_id, attempt, task, team, user, gpus, milli_cpus, start_at, end_at "
                "FROM task_usage WHERE end_at > ?1 AND start_at < ?2 "
                "AND (?3 = '' OR team = ?3) AND (?4 = '' OR user = ?4) "
                "UNION ALL "
                "SELECT job_id, attempt, task, team, user, gpus, milli_cpus, start_at, end_at "
                "FROM task_usage WHERE end_at IS NULL AND start_at < ?2 "
                "AND (?3 = '' OR team = ?3) AND (?4 = '' OR user = ?4)");
    if (!q.prepared()) return Error("preparing the usage query");
    BindScan(q, scan);
    TaskUsage u;
    int rc;
    while ((rc = q.Step()) == SQLITE_ROW) {
      u.job_id = q.Int(0);
      u.attempt = static_cast<int>(q.Int(1));
      u.task = q.Text(2);
      u.team = q.Text(3);
      u.user = q.Text(4);
      u.gpus = q.Int(5);
      u.milli_cpus = q.Int(6);
      u.start = FromMicros(q.Int(7));
      u.end = q.IsNull(8) ? std::nullopt : std::optional<Timestamp>(FromMicros(q.Int(8)));
      hold(u);
    }
    if (rc != SQLITE_DONE) return Error("reading usage");
    return Status::Ok();
  }

  Status ScanMilestones(const UsageScan& scan,
                        const std::function<void(const JobMilestone&)>& milestone) override {
    using Kind = JobMilestone::Kind;
    constexpr const char* kFilter = " AND (?3 = '' OR j.team = ?3) AND (?4 = '' OR j.user = ?4)";
    struct Query {
      Kind kind;
      std::string sql;
    };
    const Query queries[] = {
        {Kind::kSubmitted,
         std::string("SELECT j.id, j.team, j.user, j.submitted_at, 0, j.state, j.submitted_at "
                     "FROM jobs j WHERE j.submitted_at >= ?1 AND j.submitted_at < ?2") +
             kFilter},
        {Kind::kAttemptStarted,
         std::string("SELECT j.id, j.team, j.user, a.started_at, a.attempt, j.state, "
                     "j.submitted_at FROM job_attempts a JOIN jobs j ON j.id = a.job_id "
                     "WHERE a.started_at >= ?1 AND a.started_at < ?2") +
             kFilter},
        {Kind::kFinished,
         std::string("SELECT j.id, j.team, j.user, j.finished_at, 0, j.state, j.submitted_at "
                     "FROM jobs j WHERE j.finished_at >= ?1 AND j.finished_at < ?2") +
             kFilter},
    };
    JobMilestone m;
    for (const auto& query : queries) {
      Statement q(db_, query.sql.c_str());
      if (!q.prepared()) return Error("preparing the job milestone query");
      BindScan(q, scan);
      int rc;
      while ((rc = q.Step()) == SQLITE_ROW) {
        m.kind = query.kind;
        m.job_id = q.Int(0);
        m.team = q.Text(1);
        m.user = q.Text(2);
        m.at = FromMicros(q.Int(3));
        m.attempt = static_cast<int>(q.Int(4));
        m.final_state = ParseJobState(q.Text(5)).value_or(JobState::kPending);
        m.submitted_at = FromMicros(q.Int(6));
        milestone(m);
      }
      if (rc != SQLITE_DONE) return Error("reading job milestones");
    }
    return Status::Ok();
  }

  StatusOr<int64_t> BeginAudit(const AuditEntry& entry) override {
    COHORT_RETURN_IF_ERROR(JoinBatch("beginning an audit entry"));
    COHORT_RETURN_IF_ERROR(CheckAuditEntry(entry));
    // No fsync of its own: the WAL keeps commits in order, so the fsync of the call's own
    // change, or of an error's completion, makes this entry durable first.
    return Unsynced("beginning an audit entry", [&]() -> StatusOr<int64_t> {
      Statement insert(db_,
                       "INSERT INTO audit (time, user, remote, method, path, target, status, "
                       "outcome) VALUES (?, ?, ?, ?, ?, ?, NULL, '')");
      if (!insert.prepared()) return Error("preparing an audit insert");
      insert.Bind(1, ToMicros(entry.time));
      insert.Bind(2, entry.user);
      insert.Bind(3, entry.remote);
      insert.Bind(4, entry.method);
      insert.Bind(5, entry.path);
      insert.Bind(6, entry.target);
      if (insert.Step() != SQLITE_DONE) return Error("inserting an audit entry");
      return static_cast<int64_t>(sqlite3_last_insert_rowid(db_));
    });
  }

  Status FinishAudit(int64_t seq, int status, const std::string& target,
                     const std::string& outcome) override {
    COHORT_RETURN_IF_ERROR(JoinBatch("completing an audit entry"));
    AuditEntry text;
    text.target = target;
    text.outcome = outcome;
    COHORT_RETURN_IF_ERROR(CheckAuditEntry(text));
    auto complete = [&]() -> StatusOr<bool> {
      Statement update(db_, "UPDATE audit SET status = ?, target = ?, outcome = ? WHERE seq = ?");
      if (!update.prepared()) return Error("preparing an audit update");
      update.Bind(1, static_cast<int64_t>(status));
      update.Bind(2, target);
      update.Bind(3, outcome);
      update.Bind(4, seq);
      if (update.Step() != SQLITE_DONE) return Error("completing an audit entry");
      if (sqlite3_changes(db_) == 0) {
        return Status::NotFound(fmt::format("audit entry {} does not exist", seq));
      }
      return true;
    };
    // A call that succeeded had its change fsynced before it answered, and that fsync carried
    // the entry's beginning: its outcome becomes durable with the next fsynced write (a power cut
    // before then leaves the entry without a status, as a master stopped during the call does).
    // An error changed nothing that would carry the entry: it is fsynced now. That fsync of
    // every successful call's own was on the path of every submission (docs/performance.md).
    if (status / 100 == 2) return Unsynced("completing an audit entry", complete).status();
    return complete().status();
  }

  StatusOr<std::vector<AuditEntry>> LoadAudit(const AuditQuery& query) override {
    // Newest first through the index, so that LIMIT stops the scan; put back in order below.
    // One job's (or node's) entries through audit_by_target: an OR would hide that index.
    Statement q(db_, query.target.empty()
                         ? "SELECT seq, time, user, remote, method, path, target, status, outcome "
                           "FROM audit WHERE time >= ?1 AND time < ?2 AND (?3 = '' OR user = ?3) "
                           "AND ?5 = '' ORDER BY time DESC, seq DESC LIMIT ?4"
                         : "SELECT seq, time, user, remote, method, path, target, status, outcome "
                           "FROM audit WHERE target = ?5 AND time >= ?1 AND time < ?2 "
                           "AND (?3 = '' OR user = ?3) ORDER BY time DESC, seq DESC LIMIT ?4");
    if (!q.prepared()) return Error("preparing the audit query");
    q.Bind(1, ToMicros(query.since));
    q.Bind(2, ToMicros(query.until));
    q.Bind(3, query.user);
    q.Bind(4, query.limit);
    q.Bind(5, query.target);
    std::vector<AuditEntry> entries;
    int rc;
    while ((rc = q.Step()) == SQLITE_ROW) {
      AuditEntry e;
      e.seq = q.Int(0);
      e.time = FromMicros(q.Int(1));
      e.user = q.Text(2);
      e.remote = q.Text(3);
      e.method = q.Text(4);
      e.path = q.Text(5);
      e.target = q.Text(6);
      if (!q.IsNull(7)) e.status = static_cast<int>(q.Int(7));
      e.outcome = q.Text(8);
      entries.push_back(std::move(e));
    }
    if (rc != SQLITE_DONE) return Error("reading the audit log");
    std::reverse(entries.begin(), entries.end());
    return entries;
  }

  StatusOr<int64_t> PruneAudit(Timestamp before, int64_t max_entries) override {
    COHORT_RETURN_IF_ERROR(JoinBatch("pruning the audit log"));
    Statement del(db_,
                  "DELETE FROM audit WHERE seq IN "
                  "(SELECT seq FROM audit WHERE time < ? ORDER BY time LIMIT ?)");
    if (!del.prepared()) return Error("preparing the audit pruning");
    del.Bind(1, ToMicros(before));
    del.Bind(2, max_entries);
    if (del.Step() != SQLITE_DONE) return Error("pruning the audit log");
    return static_cast<int64_t>(sqlite3_changes(db_));
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

  StatusOr<EventPage> ReadEvents(JobId job, const EventRange& range) override {
    // OFFSET walks the skipped rows of the job's index: events only ever append, so a place in
    // the list stays the same event.
    Statement q(db_,
                "SELECT time, type, message FROM job_events WHERE job_id = ? ORDER BY seq "
                "LIMIT -1 OFFSET ?");
    if (!q.prepared()) return Error("preparing the event query");
    q.Bind(1, job);
    q.Bind(2, static_cast<int64_t>(std::min<size_t>(range.after, INT64_MAX)));
    EventPage page;
    size_t bytes = 0;
    int rc;
    while ((rc = q.Step()) == SQLITE_ROW) {
      if (page.events.size() >= range.limit || (!page.events.empty() && bytes >= range.max_bytes)) {
        page.more = true;
        return page;
      }
      page.events.push_back(JobEvent{job, FromMicros(q.Int(0)), q.Text(1), q.Text(2)});
      bytes += page.events.back().type.size() + page.events.back().message.size();
    }
    if (rc != SQLITE_DONE) return Error("reading events");
    return page;
  }

  Status SaveTeam(const TeamQuota& team) override {
    COHORT_RETURN_IF_ERROR(JoinBatch("saving a team"));
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
    COHORT_RETURN_IF_ERROR(JoinBatch("deleting a team"));
    Statement del(db_, "DELETE FROM teams WHERE name = ?");
    if (!del.prepared()) return Error("preparing a team delete");
    del.Bind(1, name);
    if (del.Step() != SQLITE_DONE) return Error("deleting a team");
    if (sqlite3_changes(db_) == 0) return Status::NotFound(fmt::format("team {}", name));
    return Status::Ok();
  }

  Status SaveSweep(const SweepRecord& sweep) override {
    COHORT_ASSIGN_OR_RETURN(std::string record, EncodeSweepRecord(sweep));
    COHORT_RETURN_IF_ERROR(JoinBatch("saving a sweep"));
    Statement upsert(db_,
                     "INSERT INTO sweeps (id, name, team, user, state, created_at, finished_at, "
                     "record) VALUES (?, ?, ?, ?, ?, ?, ?, ?) "
                     "ON CONFLICT(id) DO UPDATE SET state = excluded.state, "
                     "finished_at = excluded.finished_at, record = excluded.record");
    if (!upsert.prepared()) return Error("preparing a sweep upsert");
    upsert.Bind(1, sweep.id);
    upsert.Bind(2, sweep.name);
    upsert.Bind(3, sweep.team);
    upsert.Bind(4, sweep.user);
    upsert.Bind(5, sweep.state);
    upsert.Bind(6, ToMicros(sweep.created_at));
    if (sweep.finished_at) {
      upsert.Bind(7, ToMicros(*sweep.finished_at));
    } else {
      upsert.BindNull(7);
    }
    upsert.Bind(8, record);
    if (upsert.Step() != SQLITE_DONE) return Error("saving a sweep");
    return Status::Ok();
  }

  StatusOr<std::vector<SweepRecord>> LoadSweeps() override {
    Statement q(db_,
                "SELECT id, name, team, user, state, created_at, finished_at, record FROM sweeps "
                "ORDER BY id");
    if (!q.prepared()) return Error("preparing the sweep query");
    std::vector<SweepRecord> sweeps;
    int rc;
    while ((rc = q.Step()) == SQLITE_ROW) {
      SweepRecord s;
      s.id = q.Int(0);
      s.name = q.Text(1);
      s.team = q.Text(2);
      s.user = q.Text(3);
      s.state = q.Text(4);
      s.created_at = FromMicros(q.Int(5));
      if (!q.IsNull(6)) s.finished_at = FromMicros(q.Int(6));
      COHORT_ASSIGN_OR_RETURN(s.doc, DecodeSweepDoc(q.Text(7)));
      sweeps.push_back(std::move(s));
    }
    if (rc != SQLITE_DONE) return Error("reading sweeps");
    return sweeps;
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
    COHORT_RETURN_IF_ERROR(JoinBatch("saving a user"));
    COHORT_ASSIGN_OR_RETURN(std::string teams, EncodeUserTeams(user));
    Statement upsert(db_,
                     "INSERT INTO users (name, admin, teams, uid, gid, created_at, default_team) "
                     "VALUES (?, ?, ?, ?, ?, ?, ?) "
                     "ON CONFLICT(name) DO UPDATE SET admin = excluded.admin, "
                     "teams = excluded.teams, uid = excluded.uid, gid = excluded.gid, "
                     "default_team = excluded.default_team");
    if (!upsert.prepared()) return Error("preparing a user upsert");
    upsert.Bind(1, user.name);
    upsert.Bind(2, user.admin ? 1 : 0);
    upsert.Bind(3, teams);
    BindOptional(upsert, 4, user.uid);
    BindOptional(upsert, 5, user.gid);
    upsert.Bind(6, ToMicros(user.created_at));
    if (user.default_team) {
      upsert.Bind(7, *user.default_team);
    } else {
      upsert.BindNull(7);
    }
    if (upsert.Step() != SQLITE_DONE) return Error("saving a user");
    return Status::Ok();
  }

  Status DeleteUser(const std::string& name) override {
    COHORT_RETURN_IF_ERROR(JoinBatch("deleting a user"));
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
    Statement q(db_,
                "SELECT name, admin, teams, uid, gid, created_at, default_team FROM users "
                "ORDER BY name");
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
      if (!q.IsNull(6)) u.default_team = q.Text(6);
      users.push_back(std::move(u));
    }
    if (rc != SQLITE_DONE) return Error("reading users");
    return users;
  }

  Status SaveToken(const TokenRecord& token) override {
    COHORT_RETURN_IF_ERROR(JoinBatch("saving a token"));
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

  Status DeleteToken(const std::string& id) override {
    COHORT_RETURN_IF_ERROR(JoinBatch("deleting a token"));
    Statement del(db_, "DELETE FROM tokens WHERE id = ?");
    if (!del.prepared()) return Error("preparing a token delete");
    del.Bind(1, id);
    if (del.Step() != SQLITE_DONE) return Error("deleting a token");
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
    COHORT_RETURN_IF_ERROR(JoinBatch("saving a secret"));
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
    COHORT_RETURN_IF_ERROR(JoinBatch("deleting a secret"));
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
    COHORT_RETURN_IF_ERROR(JoinBatch("saving a node"));
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
    COHORT_RETURN_IF_ERROR(JoinBatch("deleting a node"));
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
  Status Exec(const char* sql, const std::string& what) { return SqliteExec(File(), sql, what); }

  Status Error(const std::string& what) { return SqliteError(File(), what); }
  SqliteFile File() const { return SqliteFile{db_, path_, "the state database"}; }

  static void BindScan(Statement& q, const UsageScan& scan) {
    q.Bind(1, ToMicros(scan.since));
    q.Bind(2, ToMicros(scan.until));
    q.Bind(3, scan.team);
    q.Bind(4, scan.user);
  }

  // The columns and rows that index a job's record for accounting: its end, and the start of
  // its current attempt (every attempt is saved as it is placed, so each gets its row).
  Status IndexJob(const Job& job) {
    Statement end(db_, "UPDATE jobs SET finished_at = ? WHERE id = ?");
    if (!end.prepared()) return Error("preparing a job's end");
    if (IsTerminal(job.state) && job.finished_at) {
      end.Bind(1, ToMicros(*job.finished_at));
    } else {
      end.BindNull(1);
    }
    end.Bind(2, job.id);
    if (end.Step() != SQLITE_DONE) return Error("saving a job's end");
    if (job.attempt > 0 && job.placed_at) {
      COHORT_RETURN_IF_ERROR(InsertAttempt(job.id, job.attempt, *job.placed_at));
    }
    return Status::Ok();
  }

  Status InsertAttempt(JobId job, int attempt, Timestamp started_at) {
    Statement insert(db_,
                     "INSERT OR IGNORE INTO job_attempts (job_id, attempt, started_at) "
                     "VALUES (?, ?, ?)");
    if (!insert.prepared()) return Error("preparing an attempt insert");
    insert.Bind(1, job);
    insert.Bind(2, static_cast<int64_t>(attempt));
    insert.Bind(3, ToMicros(started_at));
    if (insert.Step() != SQLITE_DONE) return Error("inserting an attempt");
    return Status::Ok();
  }

  // A hold written again (its end, or after a restart) updates its row: the key is the hold.
  Status WriteUsage(const std::vector<TaskUsage>& usage) {
    if (usage.empty()) return Status::Ok();
    Statement upsert(db_,
                     "INSERT INTO task_usage (job_id, attempt, task, team, user, gpus, "
                     "milli_cpus, start_at, end_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?) "
                     "ON CONFLICT(job_id, attempt, task, start_at) "
                     "DO UPDATE SET end_at = excluded.end_at");
    if (!upsert.prepared()) return Error("preparing a usage upsert");
    for (const auto& u : usage) {
      upsert.Reset();
      upsert.Bind(1, u.job_id);
      upsert.Bind(2, static_cast<int64_t>(u.attempt));
      upsert.Bind(3, u.task);
      upsert.Bind(4, u.team);
      upsert.Bind(5, u.user);
      upsert.Bind(6, u.gpus);
      upsert.Bind(7, u.milli_cpus);
      upsert.Bind(8, ToMicros(u.start));
      if (u.end) {
        upsert.Bind(9, ToMicros(*u.end));
      } else {
        upsert.BindNull(9);
      }
      if (upsert.Step() != SQLITE_DONE) return Error("writing usage");
    }
    return Status::Ok();
  }

  // A job's end recorded in the runtime history: its rows, then the rows it forgets.
  Status WriteHistory(const RuntimeHistoryChange& history) {
    if (!history.rows.empty()) {
      Statement upsert(db_,
                       "INSERT INTO runtime_history (key, samples, mean_seconds, last_used) "
                       "VALUES (?, ?, ?, ?) ON CONFLICT(key) DO UPDATE SET "
                       "samples = excluded.samples, mean_seconds = excluded.mean_seconds, "
                       "last_used = excluded.last_used");
      if (!upsert.prepared()) return Error("preparing a runtime history upsert");
      for (const auto& row : history.rows) {
        upsert.Reset();
        upsert.Bind(1, row.key);
        upsert.Bind(2, row.samples);
        upsert.BindDouble(3, row.mean_seconds);
        upsert.Bind(4, row.last_used);
        if (upsert.Step() != SQLITE_DONE) return Error("writing the runtime history");
      }
    }
    if (history.forget_before > 0) {
      Statement del(db_, "DELETE FROM runtime_history WHERE last_used < ?");
      if (!del.prepared()) return Error("preparing a runtime history delete");
      del.Bind(1, history.forget_before);
      if (del.Step() != SQLITE_DONE) return Error("forgetting runtime history");
    }
    return Status::Ok();
  }

  // Schema 4 for the jobs stored before it: their ends, attempts and holds from their records.
  Status BackfillUsage() {
    Statement q(db_, "SELECT record FROM jobs ORDER BY id");
    if (!q.prepared()) return Error("preparing the usage backfill");
    int rc;
    while ((rc = q.Step()) == SQLITE_ROW) {
      COHORT_ASSIGN_OR_RETURN(Job job, DecodeJobRecord(q.Text(0)));
      COHORT_RETURN_IF_ERROR(IndexJob(job));
      for (const auto& a : job.history) {
        if (a.started_at) COHORT_RETURN_IF_ERROR(InsertAttempt(job.id, a.number, *a.started_at));
      }
      COHORT_RETURN_IF_ERROR(WriteUsage(UsageFromRecord(job)));
    }
    if (rc != SQLITE_DONE) return Error("reading jobs for the usage backfill");
    return Status::Ok();
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

  // Runs `write` with synchronous=NORMAL: its commit is not fsynced by itself, and becomes
  // durable with the next commit that is (the WAL keeps commits in order). In a batch it is
  // part of the batch's commit anyway.
  template <typename F>
  auto Unsynced(const char* what, F write) -> decltype(write()) {
    if (batch_ != Batch::kNone) return write();
    COHORT_RETURN_IF_ERROR(Exec("PRAGMA synchronous=NORMAL", what));
    auto result = write();
    COHORT_RETURN_IF_ERROR(Exec("PRAGMA synchronous=FULL", "setting synchronous=FULL"));
    return result;
  }

  // The batch's transaction is begun by its first write: a pass or a report that writes
  // nothing takes no lock and commits nothing.
  Status BeginBatch() override {
    COHORT_CHECK(batch_ == Batch::kNone);
    batch_ = Batch::kWanted;
    return Status::Ok();
  }

  Status CommitBatch() override {
    COHORT_CHECK(batch_ != Batch::kNone);
    bool open = batch_ == Batch::kOpen;
    batch_ = Batch::kNone;
    if (!open) return Status::Ok();
    COHORT_RETURN_IF_ERROR(CheckBatchAlive("committing a batch of writes"));
    return RollBackIfFailed(Exec("COMMIT", "committing a batch of writes"));
  }

  // Every write within a batch is part of its transaction: the first one begins it.
  Status JoinBatch(const char* what) {
    if (batch_ == Batch::kWanted) {
      COHORT_RETURN_IF_ERROR(Exec("BEGIN IMMEDIATE", what));
      batch_ = Batch::kOpen;
    }
    return batch_ == Batch::kOpen ? CheckBatchAlive(what) : Status::Ok();
  }

  // SQLite rolls a transaction back by itself after some errors (a full disk): then the writes
  // the batch had taken are gone although each was answered OK. Nothing more may be written or
  // committed as if they were there: the caller must treat it as a failed write (the master
  // fails stop, and its restart reloads what is durable).
  Status CheckBatchAlive(const char* what) {
    if (!sqlite3_get_autocommit(db_)) return Status::Ok();
    return Status::Internal(fmt::format(
        "{}: SQLite rolled back this batch of writes after an earlier failure; its writes are lost",
        what));
  }

  // Opens the write's own transaction: BEGIN, or within a batch a savepoint of the batch's.
  Status BeginWrite(const char* what) {
    if (batch_ == Batch::kNone) return Exec("BEGIN IMMEDIATE", what);
    COHORT_RETURN_IF_ERROR(JoinBatch(what));
    return Exec("SAVEPOINT write", what);
  }

  // Commits the write if `s` is OK, rolls it back otherwise; within a batch, releases or rolls
  // back its savepoint and leaves the batch's transaction open.
  template <typename T>
  StatusOr<T> Finish(Status s, T value) {
    if (batch_ == Batch::kOpen) {
      if (s.ok()) s = Exec("RELEASE write", "committing");
      if (!s.ok() && !sqlite3_get_autocommit(db_)) {
        Status undone = Exec("ROLLBACK TO write", "rolling back");
        if (undone.ok()) undone = Exec("RELEASE write", "rolling back");
        if (!undone.ok()) s = Status(s.code(), s.message() + "; then " + undone.message());
      }
      COHORT_RETURN_IF_ERROR(s);
      return value;
    }
    if (s.ok()) s = Exec("COMMIT", "committing");
    COHORT_RETURN_IF_ERROR(RollBackIfFailed(std::move(s)));
    return value;
  }

  Status RollBackIfFailed(Status s) { return SqliteRollBackIfFailed(File(), std::move(s)); }

  sqlite3* db_;
  std::string path_;
  int schema_version_ = 0;
  // kWanted: BeginBatch was called and nothing written yet; kOpen: the batch's transaction is.
  enum class Batch { kNone, kWanted, kOpen };
  Batch batch_ = Batch::kNone;
};

}  // namespace

StatusOr<std::unique_ptr<StateStore>> OpenSqliteStateStore(const std::string& path) {
  COHORT_ASSIGN_OR_RETURN(sqlite3 * db, SqliteOpenWal(path));
  auto store = std::make_unique<SqliteStateStore>(db, path);
  COHORT_RETURN_IF_ERROR(store->Init());
  return std::unique_ptr<StateStore>(std::move(store));
}

}  // namespace cohort::state
