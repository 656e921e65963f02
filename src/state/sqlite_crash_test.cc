// Crashes in the middle of writes. A child process writes through the SQLite store and is killed
// with SIGKILL, either at a random moment or from inside SQLite at one exact write or sync
// (testing::FaultVfs), and, on top of that, a power cut can be modelled (each file as of its last
// sync). The parent then opens the same file and must find every write the child reported done
// (through a pipe, after the store's call returned), the write it was in the middle of either
// wholly there or wholly absent, and a store that takes new writes.
//
// SQLite's own, not the contract's: a MemoryStateStore dies with its process.
#include <fcntl.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>
#include <filesystem>
#include <functional>
#include <optional>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "state/state_store.h"
#include "testing/fault_vfs.h"
#include "testing/memory_state_store.h"
#include "testing/store_contents.h"

namespace cohort::state {
namespace {

namespace fs = std::filesystem;
using cohort::testing::FaultVfs;
using cohort::testing::StoreContents;

// --- The workload: write k (from 1) is the same in every run, so that what the store must hold
// after any number of writes can be computed on a MemoryStateStore.

constexpr int kEventsPerWrite = 40;

// Jobs created by writes 1..k-1: write k creates one when k % 5 == 1.
int JobsBefore(int k) { return (k + 3) / 5; }

Job JobOfWrite(JobId id, int k) {
  Job job;
  job.id = id;
  job.spec.name = "job-" + std::to_string(id);
  job.spec.team = "vision";
  TaskGroupSpec g;
  g.role = "worker";
  g.replicas = 1 + k % 3;
  g.resources = Resources{1, 1000, 1LL << 30};
  g.command = {"python3", "train.py", "--write", std::to_string(k)};
  job.spec.tasks.push_back(g);
  job.user = "ada";
  job.submitted_at = FromMicros(1'700'000'000'000'000 + id);
  job.state = k % 2 ? JobState::kRunning : JobState::kStarting;
  job.attempt = k % 4;
  job.version = static_cast<uint64_t>(k);
  job.message = "write " + std::to_string(k);
  for (int i = 0; i < g.replicas; ++i) {
    Task t;
    t.role = "worker";
    t.index = i;
    t.rank = i;
    t.resources = g.resources;
    t.node_id = "node-" + std::to_string(i);
    t.gpus = {i};
    t.port = 30000 + k;
    t.state = TaskState::kRunning;
    job.tasks.push_back(t);
  }
  return job;
}

std::vector<JobEvent> EventsOfWrite(JobId id, int k) {
  std::vector<JobEvent> events;
  for (int i = 0; i < kEventsPerWrite; ++i) {
    events.push_back(JobEvent{id, FromMicros(k * 1000 + i), "write-" + std::to_string(k),
                              "event " + std::to_string(i) + " " + std::string(100, 'x')});
  }
  return events;
}

// A job's end recorded in the runtime history: rows changed, and older ones forgotten.
RuntimeHistoryChange HistoryOfWrite(int k) {
  return RuntimeHistoryChange{
      {{"t=vision|g=" + std::to_string(k % 4), k, k * 1.5, 2 * k}, {"*", k, k * 0.5, 2 * k + 1}},
      k > 10 ? 2 * k - 12 : 0};
}

// Jobs created, saved with many events (and the history's rows), teams, nodes: a kill may land
// inside any kind of write.
Status Write(StateStore& store, int k) {
  switch (k % 5) {
    case 1:
      return store.CreateJob(JobOfWrite(0, k), EventsOfWrite(0, k)).status();
    case 2:
    case 3: {
      JobId id = 1 + (k * 7) % JobsBefore(k);
      return store.SaveJob(JobOfWrite(id, k), EventsOfWrite(id, k), {},
                           k % 5 == 3 ? HistoryOfWrite(k) : RuntimeHistoryChange{});
    }
    case 4:
      return store.SaveTeam(TeamQuota{"team-" + std::to_string(k % 4), k, std::nullopt});
    default: {
      Node node;
      node.info.id = "node-" + std::to_string(k % 3);
      node.info.address = "10.0.0." + std::to_string(k % 3);
      node.info.milli_cpus = 1000 * k;
      node.info.memory_bytes = 1LL << 30;
      node.registered_at = FromMicros(k);
      node.last_seen = FromMicros(k);
      return store.SaveNode(node);
    }
  }
}

// What the store must hold after writes 1..k.
std::string Expected(int k) {
  cohort::testing::MemoryStateStore store;
  for (int i = 1; i <= k; ++i) {
    Status s = Write(store, i);
    if (!s.ok()) return "write " + std::to_string(i) + ": " + s.ToString();
  }
  return StoreContents(store);
}

// --- The child.

// Writes 1, 2, ... up to `last` (0: until killed) and reports each on `fd` once the store's call
// has returned OK. Never returns; exits 0 when done, 2 and up when something failed.
[[noreturn]] void WriteAndReport(const std::string& path, int last, int fd) {
  auto store = OpenSqliteStateStore(path);
  if (!store.ok()) _exit(2);
  for (int k = 1; last == 0 || k <= last; ++k) {
    if (!Write(**store, k).ok()) _exit(3);
    int32_t done = k;
    if (::write(fd, &done, sizeof done) != sizeof done) _exit(4);
  }
  store->reset();
  _exit(0);
}

struct ChildResult {
  int reported = 0;  // the last write the child reported done
  bool killed = false;
  std::string how;  // how it ended, for messages
};

// Reads the next report; false at the end of the pipe.
bool ReadReport(int fd, int* reported) {
  int32_t k = 0;
  ssize_t n;
  do {
    n = ::read(fd, &k, sizeof k);
  } while (n < 0 && errno == EINTR);
  if (n != sizeof k) return false;
  EXPECT_EQ(k, *reported + 1) << "reports must come in order";
  *reported = k;
  return true;
}

// Forks a child that runs `in_child` (to arm its FaultVfs), then writes and reports. With
// `kill_after`, the parent waits for that many reports, then for `delay`, and kills it.
ChildResult RunChild(const std::string& path, int last, const std::function<void()>& in_child,
                     std::optional<int> kill_after = std::nullopt,
                     std::chrono::microseconds delay = {}) {
  ChildResult result;
  int fds[2];
  if (::pipe(fds) != 0) {
    ADD_FAILURE() << "pipe: " << strerror(errno);
    return result;
  }
  pid_t pid = ::fork();
  if (pid < 0) {
    ADD_FAILURE() << "fork: " << strerror(errno);
    return result;
  }
  if (pid == 0) {
    ::close(fds[0]);
    in_child();
    WriteAndReport(path, last, fds[1]);
  }
  ::close(fds[1]);
  if (kill_after) {
    while (result.reported < *kill_after && ReadReport(fds[0], &result.reported)) {
    }
    std::this_thread::sleep_for(delay);
    ::kill(pid, SIGKILL);
  }
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  while (ReadReport(fds[0], &result.reported)) {
  }
  ::close(fds[0]);
  result.killed = WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL;
  result.how = WIFSIGNALED(status) ? "killed by signal " + std::to_string(WTERMSIG(status))
                                   : "exited with " + std::to_string(WEXITSTATUS(status));
  return result;
}

// --- The parent's checks.

struct Outcomes {
  int absent = 0;  // the write in progress left nothing
  int whole = 0;   // it was all there, though never reported
};

// The first line where two contents differ, to say what is wrong without printing megabytes.
std::string FirstDifference(const std::string& a, const std::string& b) {
  size_t i = 0;
  while (i < a.size() && i < b.size() && a[i] == b[i]) ++i;
  size_t start = a.rfind('\n', i);
  start = start == std::string::npos ? 0 : start + 1;
  auto line = [&](const std::string& s) { return s.substr(start, s.find('\n', start) - start); };
  return "store:    " + line(a).substr(0, 300) + "\nexpected: " + line(b).substr(0, 300);
}

// After a crash reported `reported` writes done: the store opens, holds those and either all or
// nothing of the next, takes the write after, and keeps it across a reopen.
void ExpectRecovered(const std::string& path, int reported, Outcomes* outcomes) {
  auto store = OpenSqliteStateStore(path);
  ASSERT_TRUE(store.ok()) << "the store does not open after the crash: "
                          << store.status().ToString();
  std::string actual = StoreContents(**store);
  std::string done = Expected(reported);
  int present = reported;
  if (actual == done) {
    ++outcomes->absent;
  } else if (actual == Expected(reported + 1)) {
    ++outcomes->whole;
    present = reported + 1;
  } else {
    FAIL() << "after " << reported << " reported writes the store holds neither those nor one "
           << "more, whole\n"
           << FirstDifference(actual, done);
  }
  Status next = Write(**store, present + 1);
  ASSERT_TRUE(next.ok()) << "the store takes no write after the crash: " << next.ToString();
  store->reset();
  store = OpenSqliteStateStore(path);
  ASSERT_TRUE(store.ok()) << store.status().ToString();
  EXPECT_EQ(StoreContents(**store), Expected(present + 1));
}

class SqliteCrashTest : public ::testing::Test {
 protected:
  void SetUp() override {
    // In memory where there is a tmpfs: a process crash leaves the OS's page cache as it was
    // wherever it lives, the power cut is modelled, and fsync there costs nothing, which makes
    // the hundreds of crashes below take seconds rather than minutes.
    fs::path base = fs::is_directory("/dev/shm") ? fs::path("/dev/shm") : fs::temp_directory_path();
    std::string pattern = (base / "cohort-crash-test-XXXXXX").string();
    ASSERT_NE(mkdtemp(pattern.data()), nullptr);
    dir_ = pattern;
  }
  void TearDown() override { fs::remove_all(dir_); }

  // A database of its own for each crash.
  std::string FreshPath() {
    fs::path d = dir_ / std::to_string(++runs_);
    fs::create_directories(d);
    return (d / "cohort.db").string();
  }

  // How many writes and syncs `writes` writes make, from creating the database on: the points
  // at which a crash can land.
  int64_t CountIo(int writes) {
    int64_t count = 0;
    vfs_.SetBeforeWrite([&](int64_t n) { count = n; });
    {
      std::string path = FreshPath();
      auto store = OpenSqliteStateStore(path);
      EXPECT_TRUE(store.ok());
      for (int k = 1; k <= writes && store.ok(); ++k) EXPECT_TRUE(Write(**store, k).ok());
    }
    vfs_.SetBeforeWrite(nullptr);
    return count;
  }

  // Kills a child at every write and sync of a run of `writes` writes, one crash per point;
  // with `power_cut`, each file then goes back to its last sync.
  void CrashAtEveryWrite(int writes, bool power_cut) {
    const int64_t points = CountIo(writes);
    ASSERT_GT(points, writes) << "every write makes at least one write and one sync";
    Outcomes outcomes;
    for (int64_t point = 1; point <= points; ++point) {
      SCOPED_TRACE("killed at I/O " + std::to_string(point) + " of " + std::to_string(points));
      std::string path = FreshPath();
      ChildResult child = RunChild(path, writes, [&] {
        vfs_.KeepSyncedCopies(power_cut);
        vfs_.SetBeforeWrite([point](int64_t n) {
          if (n == point) ::raise(SIGKILL);
        });
      });
      ASSERT_TRUE(child.killed) << "the child " << child.how << " after " << child.reported
                                << " writes";
      if (power_cut) FaultVfs::PowerCut(path);
      ExpectRecovered(path, child.reported, &outcomes);
      if (HasFatalFailure()) return;
    }
    std::printf("%lld crash points: the write in progress absent %d times, whole %d times\n",
                static_cast<long long>(points), outcomes.absent, outcomes.whole);
    // Killed between a transaction's writes, it is absent; killed after its commit was written
    // and before the call returned, it is whole though never reported. A power cut keeps only
    // what was synced, and the sync is the last thing before the call returns: never whole.
    EXPECT_GT(outcomes.absent, 0);
    if (!power_cut) {
      EXPECT_GT(outcomes.whole, 0);
    }
  }

  FaultVfs vfs_;  // declared first: it outlives every store
  fs::path dir_;
  int runs_ = 0;
};

TEST_F(SqliteCrashTest, TheWorkloadIsWhatTheMemoryStoreComputes) {
  // The checks below compare SQLite with the memory store: they must agree without a crash.
  std::string path = FreshPath();
  auto store = OpenSqliteStateStore(path);
  ASSERT_TRUE(store.ok());
  for (int k = 1; k <= 12; ++k) ASSERT_TRUE(Write(**store, k).ok()) << "write " << k;
  EXPECT_EQ(StoreContents(**store), Expected(12));
  EXPECT_NE(Expected(12), Expected(11));
}

TEST_F(SqliteCrashTest, KilledAtEveryWriteAndSyncLosesNothingReported) {
  CrashAtEveryWrite(7, /*power_cut=*/false);
}

TEST_F(SqliteCrashTest, PowerCutAtEveryWriteAndSyncLosesNothingReported) {
  // synchronous=FULL: a commit is synced before the store's call returns.
  CrashAtEveryWrite(7, /*power_cut=*/true);
}

TEST_F(SqliteCrashTest, KilledAtRandomMomentsLosesNothingReported) {
  const unsigned seed = std::random_device{}();
  SCOPED_TRACE("seed " + std::to_string(seed));
  std::mt19937 random(seed);
  Outcomes outcomes;
  for (int run = 0; run < 20; ++run) {
    const int after = static_cast<int>(random() % 12);
    const auto delay = std::chrono::microseconds(random() % 15'000);
    SCOPED_TRACE("run " + std::to_string(run) + ": killed " + std::to_string(delay.count()) +
                 "us after write " + std::to_string(after));
    std::string path = FreshPath();
    ChildResult child = RunChild(
        path, 0, [] {}, after, delay);
    ASSERT_TRUE(child.killed) << "the child " << child.how;
    ASSERT_GE(child.reported, after);
    ExpectRecovered(path, child.reported, &outcomes);
    if (HasFatalFailure()) return;
  }
  std::printf("20 random kills: the write in progress absent %d times, whole %d times\n",
              outcomes.absent, outcomes.whole);
}

// The audit log's durability (docs/security.md, "No call escapes it"): a refused call's entry
// is fsynced with its completion; a successful call's completion rides on the next fsynced
// write, so a power cut right after it leaves the entry (begun before the call's synced change)
// without a status, and a later synced write makes it whole.
class AuditPowerCutTest : public SqliteCrashTest {
 protected:
  // In a child with the power cut modelled: a refused call, then a successful one that saves a
  // job, then, with `later_write`, another synced write. Returns what the audit log holds after
  // a power cut once the child has exited, as "path status" lines.
  std::vector<std::string> AfterPowerCut(bool later_write) {
    std::string path = FreshPath();
    pid_t pid = ::fork();
    if (pid == 0) {
      vfs_.KeepSyncedCopies(true);
      auto store = OpenSqliteStateStore(path);
      if (!store.ok()) _exit(2);
      StateStore& st = **store;
      auto job = st.CreateJob(JobOfWrite(0, 2), {});
      if (!job.ok()) _exit(3);
      AuditEntry refused{0,  FromMicros(1), "mallory", "10.0.0.9:1", "POST", "/api/v1/teams/x",
                         "", std::nullopt,  ""};
      auto r = st.BeginAudit(refused);
      if (!r.ok() || !st.FinishAudit(*r, 403, "", "permission_denied").ok()) _exit(4);
      AuditEntry kill{0,       FromMicros(2), "ada", "10.0.0.1:1", "POST", "/api/v1/jobs/1/kill",
                      "job 1", std::nullopt,  ""};
      auto k = st.BeginAudit(kill);
      if (!k.ok() || !st.SaveJob(*job, {}).ok() || !st.FinishAudit(*k, 200, "job 1", "").ok()) {
        _exit(5);
      }
      if (later_write && !st.SaveTeam(TeamQuota{"vision", 4, std::nullopt}).ok()) _exit(6);
      _exit(0);  // the store left open: closing it would checkpoint, and sync, the log
    }
    int status = 0;
    while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
    }
    EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << "child status " << status;
    FaultVfs::PowerCut(path);
    auto store = OpenSqliteStateStore(path);
    EXPECT_TRUE(store.ok()) << store.status().ToString();
    std::vector<std::string> lines;
    if (!store.ok()) return lines;
    auto entries = (*store)->LoadAudit(AuditQuery{FromMicros(0), FromMicros(10), "", 100, ""});
    EXPECT_TRUE(entries.ok()) << entries.status().ToString();
    if (!entries.ok()) return lines;
    for (const auto& e : *entries) {
      lines.push_back(e.path + " " + (e.status ? std::to_string(*e.status) : "none"));
    }
    return lines;
  }
};

TEST_F(AuditPowerCutTest, ARefusedCallIsDurableAndASuccessfulOnesOutcomeRidesOnTheNextWrite) {
  EXPECT_EQ(AfterPowerCut(/*later_write=*/false),
            (std::vector<std::string>{"/api/v1/teams/x 403", "/api/v1/jobs/1/kill none"}));
  EXPECT_EQ(AfterPowerCut(/*later_write=*/true),
            (std::vector<std::string>{"/api/v1/teams/x 403", "/api/v1/jobs/1/kill 200"}));
}

// Group commit (StateStore::BeginBatch): the writes of a batch are durable together when it
// commits, and none of them before; a failed write in it takes nothing else with it.
class BatchTest : public SqliteCrashTest {
 protected:
  // In a child: a batch of three jobs, killed before or after its commit. Returns how many jobs
  // the store holds afterwards.
  size_t JobsAfterKill(bool commit_first) {
    std::string path = FreshPath();
    pid_t pid = ::fork();
    if (pid == 0) {
      auto store = OpenSqliteStateStore(path);
      if (!store.ok() || !(*store)->BeginBatch().ok()) _exit(2);
      for (int k = 1; k <= 3; ++k) {
        if (!(*store)->CreateJob(JobOfWrite(0, 5 * k + 1), {}).ok()) _exit(3);
      }
      if (commit_first && !(*store)->CommitBatch().ok()) _exit(4);
      ::raise(SIGKILL);
    }
    int status = 0;
    while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
    }
    EXPECT_TRUE(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL) << "child status " << status;
    auto store = OpenSqliteStateStore(path);
    EXPECT_TRUE(store.ok()) << store.status().ToString();
    if (!store.ok()) return 0;
    auto jobs = (*store)->LoadJobs();
    EXPECT_TRUE(jobs.ok());
    return jobs.ok() ? jobs->size() : 0;
  }
};

TEST_F(BatchTest, NothingBeforeTheCommitEverythingAfterIt) {
  EXPECT_EQ(JobsAfterKill(/*commit_first=*/false), 0u);
  EXPECT_EQ(JobsAfterKill(/*commit_first=*/true), 3u);
}

TEST_F(BatchTest, AFailedWriteTakesNothingElseWithIt) {
  std::string path = FreshPath();
  auto store = OpenSqliteStateStore(path);
  ASSERT_TRUE(store.ok());
  StateStore& st = **store;
  ASSERT_TRUE(st.BeginBatch().ok());
  auto a = st.CreateJob(JobOfWrite(0, 1), EventsOfWrite(0, 1));
  ASSERT_TRUE(a.ok()) << a.status().ToString();
  // A job that does not exist, with events: refused whole, events included.
  Status missing = st.SaveJob(JobOfWrite(99, 2), EventsOfWrite(99, 2));
  EXPECT_EQ(missing.code(), StatusCode::kNotFound);
  auto b = st.CreateJob(JobOfWrite(0, 6), {});
  ASSERT_TRUE(b.ok()) << b.status().ToString();
  ASSERT_TRUE(st.SaveJob(*b, EventsOfWrite(b->id, 7)).ok());
  ASSERT_TRUE(st.CommitBatch().ok());
  store->reset();
  store = OpenSqliteStateStore(path);
  ASSERT_TRUE(store.ok());
  auto jobs = (*store)->LoadJobs();
  ASSERT_TRUE(jobs.ok());
  EXPECT_EQ(jobs->size(), 2u);
  auto events = (*store)->LoadEvents(b->id);
  ASSERT_TRUE(events.ok());
  EXPECT_EQ(events->size(), static_cast<size_t>(kEventsPerWrite));
  auto none = (*store)->LoadEvents(99);
  ASSERT_TRUE(none.ok());
  EXPECT_TRUE(none->empty());
}

// A full disk in the middle of a batch: SQLite may roll the whole batch back by itself. Then the
// writes it had taken (each answered OK) are gone, and the batch must not commit as if they were
// there: either its commit fails, or every write answered OK is in the store.
TEST_F(BatchTest, AFullDiskNeverLosesAnAnsweredWriteSilently) {
  for (int64_t room : {int64_t{1} << 10, int64_t{16} << 10, int64_t{64} << 10}) {
    SCOPED_TRACE("room " + std::to_string(room));
    std::string path = FreshPath();
    std::vector<JobId> answered;
    Status committed;
    {
      auto store = OpenSqliteStateStore(path);
      ASSERT_TRUE(store.ok());
      StateStore& st = **store;
      ASSERT_TRUE(st.BeginBatch().ok());
      auto first = st.CreateJob(JobOfWrite(0, 1), EventsOfWrite(0, 1));
      ASSERT_TRUE(first.ok()) << first.status().ToString();
      answered.push_back(first->id);
      vfs_.SetCapacity(vfs_.BytesUsed() + room);
      // Writes until the disk is full, then one more of each kind.
      // Past SQLite's page cache (2 MiB), so that it spills into the log in the middle of the
      // batch and meets the full disk there, not only at the commit.
      for (int k = 2; k < 1500; ++k) {
        auto job = st.CreateJob(JobOfWrite(0, 5 * k + 1), EventsOfWrite(0, k));
        if (!job.ok()) break;
        answered.push_back(job->id);
      }
      Status node = st.SaveNode(Node{});
      (void)node;  // answered or not, it is not counted
      committed = st.CommitBatch();
      vfs_.SetCapacity(-1);
    }
    auto store = OpenSqliteStateStore(path);
    ASSERT_TRUE(store.ok()) << store.status().ToString();
    auto jobs = (*store)->LoadJobs();
    ASSERT_TRUE(jobs.ok());
    if (committed.ok()) {
      EXPECT_EQ(jobs->size(), answered.size())
          << "the commit said OK, and answered writes are gone";
    } else {
      EXPECT_THAT(committed.message(), ::testing::HasSubstr("batch")) << committed.ToString();
    }
  }
}

// A batch with no write takes no lock and commits nothing; the store takes writes after it as
// before.
TEST_F(BatchTest, AnEmptyBatchIsNothing) {
  std::string path = FreshPath();
  auto store = OpenSqliteStateStore(path);
  ASSERT_TRUE(store.ok());
  ASSERT_TRUE((*store)->BeginBatch().ok());
  ASSERT_TRUE((*store)->CommitBatch().ok());
  EXPECT_TRUE((*store)->CreateJob(JobOfWrite(0, 1), {}).ok());
}

}  // namespace
}  // namespace cohort::state
