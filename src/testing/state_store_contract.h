// What every StateStore must do, as one GoogleTest suite that each implementation runs: the
// SQLite store (state/state_store_test.cc), the in-memory one and the fault-injecting decorator
// (testing/*_state_store_test.cc), and any store added later.
//
// This header defines the tests, so it is included by exactly one .cc of a test binary, which
// instantiates the suite with a backend for its store:
//
//   class PostgresBackend : public cohort::testing::StateStoreBackend {
//    public:
//     PostgresBackend();   // creates an empty database
//     ~PostgresBackend();  // drops it
//     StatusOr<std::unique_ptr<state::StateStore>> Open() override;
//   };
//   using cohort::testing::StateStoreContract;  // the macro takes no qualified name
//   INSTANTIATE_TEST_SUITE_P(
//       Postgres, StateStoreContract,
//       ::testing::Values(StateStoreContractParam{
//           "Postgres", [] { return std::make_unique<PostgresBackend>(); }}),
//       StateStoreContractParamName);
//
// The suite checks what state/state_store.h promises and what the master relies on, and nothing
// of one store's mechanism (schema versions, WAL): those stay in the store's own tests.
#pragma once

#include <gtest/gtest.h>

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <functional>
#include <memory>
#include <ostream>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "model/job_spec_parser.h"
#include "model/json.h"
#include "state/state_store.h"

namespace cohort::testing {

// One store implementation's side of the contract: a backing state of its own (a database file,
// a database, a MemoryStateStore) that starts empty and lives as long as the backend.
class StateStoreBackend {
 public:
  virtual ~StateStoreBackend() = default;
  // A store over the backing state. A test calls it again, after destroying the store it had,
  // to model a restart of the master: the new store must see everything written through the
  // earlier ones, as reopening the database file does.
  virtual StatusOr<std::unique_ptr<state::StateStore>> Open() = 0;
};

struct StateStoreContractParam {
  std::string name;  // ends the test names: StateStoreContract.CreateAssignsIdsFromOne/Sqlite
  // Called once per test, for a fresh backend.
  std::function<std::unique_ptr<StateStoreBackend>()> make_backend;
};

inline std::string StateStoreContractParamName(
    const ::testing::TestParamInfo<StateStoreContractParam>& info) {
  return info.param.name;
}

inline void PrintTo(const StateStoreContractParam& param, std::ostream* os) { *os << param.name; }

class StateStoreContract : public ::testing::TestWithParam<StateStoreContractParam> {
 protected:
  void SetUp() override {
    backend_ = GetParam().make_backend();
    ASSERT_NE(backend_, nullptr);
  }

  std::unique_ptr<state::StateStore> Open() {
    auto store = backend_->Open();
    EXPECT_TRUE(store.ok()) << store.status().ToString();
    return store.ok() ? std::move(store).value() : nullptr;
  }

  // A valid job as the master creates it: pending, every optional field empty.
  static Job PendingJob(const std::string& name = "resnet") {
    Job job;
    job.spec.name = name;
    job.spec.team = "vision";
    TaskGroupSpec g;
    g.role = "worker";
    g.replicas = 2;
    g.resources = Resources{2, 4000, 8LL << 30};
    g.command = {"python3", "train.py"};
    job.spec.tasks.push_back(g);
    job.user = "ada";
    job.submitted_at = FromMicros(1'700'000'000'123'456);
    return job;
  }

  // A job with every field, the spec's included, away from its default.
  static Job FullJob() {
    Job job = PendingJob("bert");
    JobSpec& spec = job.spec;
    spec.priority = 37;
    spec.framework = Framework::kPyTorch;
    spec.tasks[0].replicas = 2;
    spec.tasks[0].max_replicas = 4;
    spec.tasks[0].env = {{"LR", "0.1"}, {"SEED", "7"}};
    spec.tasks[0].workdir = "/data/bert";
    TaskGroupSpec chief;
    chief.role = "chief";
    chief.resources = Resources{0, 1500, 3LL << 20};
    chief.command = {"python3", "chief.py", "--port", "1234"};
    spec.tasks.push_back(chief);
    spec.restart.max_attempts = 3;
    spec.restart.on = {RestartCause::kNodeLost, RestartCause::kFailure};
    spec.restart.backoff = std::chrono::seconds(3);
    spec.restart.max_backoff = std::chrono::minutes(2);
    spec.max_runtime = std::chrono::hours(2);
    spec.grace_period = std::chrono::seconds(45);
    spec.constraints.gpu_model = "H100";
    spec.constraints.labels = {{"zone", "b"}};

    job.state = JobState::kStopping;
    job.attempt = 2;
    job.placed_at = FromMicros(1'700'000'001'000'001);
    job.running_at = FromMicros(1'700'000'001'500'002);
    job.finished_at = FromMicros(1'700'000'002'000'003);
    job.message = "preempted by job 12";
    job.stop_target = JobState::kPending;
    job.preempted_for = 12;
    job.failures = 1;
    job.preemptions = 2;
    job.not_before = FromMicros(1'700'000'003'000'005);
    job.request_id = "cli-7f3a9c";
    job.request_digest = "9e107d9d372bb682";
    job.version = 9;

    Task t;
    t.role = "worker";
    t.index = 1;
    t.rank = 1;
    t.resources = Resources{2, 4000, 8LL << 30};
    t.node_id = "node-a";
    t.host = "10.0.0.1";
    t.gpus = {2, 3};
    t.port = 30001;
    t.state = TaskState::kFailed;
    t.stop_requested = true;
    t.scaled_down = true;
    t.exit_code = 3;
    t.signal = 9;
    t.pid = 4242;
    t.started_at = job.running_at;
    t.finished_at = FromMicros(1'700'000'001'900'004);
    t.held_since = FromMicros(1'700'000'001'000'001);
    t.assigned_version = 7;
    job.tasks.push_back(t);
    Task chief_task;
    chief_task.role = "chief";
    chief_task.rank = 2;
    chief_task.resources = chief.resources;
    chief_task.node_id = "node-b";
    job.tasks.push_back(chief_task);  // optional fields empty

    job.history.push_back(AttemptSummary{1,
                                         FromMicros(1'700'000'000'500'000),
                                         FromMicros(1'700'000'000'900'000),
                                         "failed: worker/0",
                                         {{"worker/0", "node-a"}, {"chief/0", "node-b"}}});
    job.history.push_back(AttemptSummary{2, std::nullopt, std::nullopt, "", {}});
    return job;
  }

  static Node FullNode(const std::string& id) {
    Node node;
    node.info.id = id;
    node.info.address = "10.0.0.1";
    node.info.milli_cpus = 16500;
    node.info.memory_bytes = 64LL << 30;
    node.info.gpus.push_back(Gpu{0, "GPU-1", "H100", 80LL << 30, "00000000:01:00.0", 0});
    node.info.gpus.push_back(Gpu{1, "GPU-2", "H100", 80LL << 30, "00000000:02:00.0", 1});
    node.info.gpu_links.push_back(GpuLink{0, 1, GpuLinkType::kNvLink, 12});
    node.info.gpu_source = "nvml";
    node.info.ports = PortRange{31000, 31099};
    node.info.labels = {{"zone", "b"}, {"rack", "7"}};
    node.info.agent_version = "0.1.0";
    node.state = NodeState::kReady;
    node.registered_at = FromMicros(1'700'000'000'000'005);
    node.last_seen = FromMicros(1'700'000'000'000'006);
    return node;
  }

  static JobEvent Event(JobId job, int64_t micros, std::string type, std::string message = "") {
    return JobEvent{job, FromMicros(micros), std::move(type), std::move(message)};
  }

  // Field by field, so that a field a store drops is named in the failure.
  static void ExpectSameJob(const Job& actual, const Job& expected) {
    SCOPED_TRACE("job " + std::to_string(expected.id));
    EXPECT_EQ(actual.id, expected.id);
    // The spec's own fields are the model's to round-trip; its JSON form covers them all.
    EXPECT_EQ(ToJson(actual.spec).dump(), ToJson(expected.spec).dump());
    EXPECT_EQ(actual.user, expected.user);
    EXPECT_EQ(actual.state, expected.state);
    EXPECT_EQ(actual.attempt, expected.attempt);
    EXPECT_EQ(actual.submitted_at, expected.submitted_at);
    EXPECT_EQ(actual.placed_at, expected.placed_at);
    EXPECT_EQ(actual.running_at, expected.running_at);
    EXPECT_EQ(actual.finished_at, expected.finished_at);
    EXPECT_EQ(actual.message, expected.message);
    EXPECT_EQ(actual.stop_target, expected.stop_target);
    EXPECT_EQ(actual.preempted_for, expected.preempted_for);
    EXPECT_EQ(actual.failures, expected.failures);
    EXPECT_EQ(actual.preemptions, expected.preemptions);
    EXPECT_EQ(actual.not_before, expected.not_before);
    EXPECT_EQ(actual.request_id, expected.request_id);
    EXPECT_EQ(actual.request_digest, expected.request_digest);
    EXPECT_EQ(actual.version, expected.version);
    ASSERT_EQ(actual.tasks.size(), expected.tasks.size());
    for (size_t i = 0; i < expected.tasks.size(); ++i) {
      SCOPED_TRACE("task " + std::to_string(i));
      const Task& a = actual.tasks[i];
      const Task& e = expected.tasks[i];
      EXPECT_EQ(a.role, e.role);
      EXPECT_EQ(a.index, e.index);
      EXPECT_EQ(a.rank, e.rank);
      EXPECT_EQ(a.resources, e.resources);
      EXPECT_EQ(a.node_id, e.node_id);
      EXPECT_EQ(a.host, e.host);
      EXPECT_EQ(a.gpus, e.gpus);
      EXPECT_EQ(a.port, e.port);
      EXPECT_EQ(a.state, e.state);
      EXPECT_EQ(a.stop_requested, e.stop_requested);
      EXPECT_EQ(a.scaled_down, e.scaled_down);
      EXPECT_EQ(a.exit_code, e.exit_code);
      EXPECT_EQ(a.signal, e.signal);
      EXPECT_EQ(a.pid, e.pid);
      EXPECT_EQ(a.started_at, e.started_at);
      EXPECT_EQ(a.finished_at, e.finished_at);
      EXPECT_EQ(a.held_since, e.held_since);
      EXPECT_EQ(a.assigned_version, e.assigned_version);
    }
    ASSERT_EQ(actual.history.size(), expected.history.size());
    for (size_t i = 0; i < expected.history.size(); ++i) {
      SCOPED_TRACE("history " + std::to_string(i));
      EXPECT_EQ(actual.history[i].number, expected.history[i].number);
      EXPECT_EQ(actual.history[i].started_at, expected.history[i].started_at);
      EXPECT_EQ(actual.history[i].finished_at, expected.history[i].finished_at);
      EXPECT_EQ(actual.history[i].result, expected.history[i].result);
      EXPECT_EQ(actual.history[i].nodes, expected.history[i].nodes);
    }
  }

  static void ExpectSameEvents(const std::vector<JobEvent>& actual,
                               const std::vector<JobEvent>& expected) {
    ASSERT_EQ(actual.size(), expected.size());
    for (size_t i = 0; i < expected.size(); ++i) {
      SCOPED_TRACE("event " + std::to_string(i));
      EXPECT_EQ(actual[i].job_id, expected[i].job_id);
      EXPECT_EQ(actual[i].time, expected[i].time);
      EXPECT_EQ(actual[i].type, expected[i].type);
      EXPECT_EQ(actual[i].message, expected[i].message);
    }
  }

  // Everything but the state, which the store does not keep.
  static void ExpectSameNode(const Node& actual, const Node& expected) {
    SCOPED_TRACE("node " + expected.info.id);
    EXPECT_EQ(ToJson(actual.info).dump(), ToJson(expected.info).dump());
    EXPECT_EQ(actual.registered_at, expected.registered_at);
    EXPECT_EQ(actual.last_seen, expected.last_seen);
    EXPECT_EQ(actual.drained, expected.drained);
    EXPECT_EQ(actual.drain_reason, expected.drain_reason);
  }

  // Jobs as loaded, in order; an empty list after a failure.
  static std::vector<Job> Jobs(state::StateStore& store) {
    auto jobs = store.LoadJobs();
    EXPECT_TRUE(jobs.ok()) << jobs.status().ToString();
    return jobs.ok() ? *jobs : std::vector<Job>{};
  }
  static std::vector<JobEvent> Events(state::StateStore& store, JobId job) {
    auto events = store.LoadEvents(job);
    EXPECT_TRUE(events.ok()) << events.status().ToString();
    return events.ok() ? *events : std::vector<JobEvent>{};
  }
  static std::vector<TeamQuota> Teams(state::StateStore& store) {
    auto teams = store.LoadTeams();
    EXPECT_TRUE(teams.ok()) << teams.status().ToString();
    return teams.ok() ? *teams : std::vector<TeamQuota>{};
  }
  static std::vector<Node> Nodes(state::StateStore& store) {
    auto nodes = store.LoadNodes();
    EXPECT_TRUE(nodes.ok()) << nodes.status().ToString();
    return nodes.ok() ? *nodes : std::vector<Node>{};
  }
  static std::vector<std::string> TeamNames(state::StateStore& store) {
    std::vector<std::string> names;
    for (const auto& t : Teams(store)) names.push_back(t.name);
    return names;
  }

  std::unique_ptr<StateStoreBackend> backend_;
};

TEST_P(StateStoreContract, NewStoreIsEmpty) {
  auto store = Open();
  ASSERT_NE(store, nullptr);
  EXPECT_TRUE(Jobs(*store).empty());
  EXPECT_TRUE(Events(*store, 1).empty());
  EXPECT_TRUE(Teams(*store).empty());
  EXPECT_TRUE(Nodes(*store).empty());
}

TEST_P(StateStoreContract, CreateAssignsIdsFromOneUpward) {
  auto store = Open();
  ASSERT_NE(store, nullptr);
  Job job = PendingJob("a");
  job.id = 42;  // ignored
  auto a = store->CreateJob(job, {});
  ASSERT_TRUE(a.ok()) << a.status().ToString();
  EXPECT_EQ(a->id, 1);
  job.id = 1;
  ExpectSameJob(*a, job);  // the job as given, with its id
  auto b = store->CreateJob(PendingJob("b"), {});
  auto c = store->CreateJob(PendingJob("c"), {});
  ASSERT_TRUE(b.ok() && c.ok());
  EXPECT_EQ(b->id, 2);
  EXPECT_EQ(c->id, 3);

  auto jobs = Jobs(*store);  // in id order
  ASSERT_EQ(jobs.size(), 3u);
  EXPECT_EQ(jobs[0].spec.name, "a");
  EXPECT_EQ(jobs[1].spec.name, "b");
  EXPECT_EQ(jobs[2].spec.name, "c");
  ExpectSameJob(jobs[0], job);
}

TEST_P(StateStoreContract, CreateStoresEventsWithTheJob) {
  auto store = Open();
  ASSERT_NE(store, nullptr);
  // The events' job ids are the store's to fill in: the caller cannot know the id yet.
  auto job = store->CreateJob(
      PendingJob(), {Event(0, 10, "submitted", "by ada"), Event(77, 11, "queued", "behind 3")});
  ASSERT_TRUE(job.ok()) << job.status().ToString();
  ExpectSameEvents(Events(*store, job->id), {Event(job->id, 10, "submitted", "by ada"),
                                             Event(job->id, 11, "queued", "behind 3")});

  auto quiet = store->CreateJob(PendingJob(), {});
  ASSERT_TRUE(quiet.ok());
  EXPECT_TRUE(Events(*store, quiet->id).empty());
  EXPECT_EQ(Events(*store, job->id).size(), 2u);
}

TEST_P(StateStoreContract, SaveOverwritesTheJobAndAppendsEvents) {
  auto store = Open();
  ASSERT_NE(store, nullptr);
  auto created = store->CreateJob(PendingJob("a"), {Event(0, 10, "submitted")});
  auto other = store->CreateJob(PendingJob("b"), {Event(0, 11, "submitted")});
  ASSERT_TRUE(created.ok() && other.ok());

  Job job = *created;
  job.state = JobState::kStarting;
  job.attempt = 1;
  job.version = 2;
  ASSERT_TRUE(store->SaveJob(job, {Event(job.id, 20, "placed", "on node-a")}).ok());
  job.state = JobState::kRunning;
  job.version = 3;
  ASSERT_TRUE(store->SaveJob(job, {Event(job.id, 30, "running"), Event(job.id, 31, "note")}).ok());
  job.version = 4;
  ASSERT_TRUE(store->SaveJob(job, {}).ok());  // no events: the job alone

  auto jobs = Jobs(*store);
  ASSERT_EQ(jobs.size(), 2u);
  ExpectSameJob(jobs[0], job);
  ExpectSameJob(jobs[1], *other);
  ExpectSameEvents(Events(*store, job.id),
                   {Event(job.id, 10, "submitted"), Event(job.id, 20, "placed", "on node-a"),
                    Event(job.id, 30, "running"), Event(job.id, 31, "note")});
  ExpectSameEvents(Events(*store, other->id), {Event(other->id, 11, "submitted")});
}

TEST_P(StateStoreContract, SaveOfUnknownJobIsNotFoundAndStoresNothing) {
  auto store = Open();
  ASSERT_NE(store, nullptr);
  auto existing = store->CreateJob(PendingJob(), {Event(0, 10, "submitted")});
  ASSERT_TRUE(existing.ok());

  Job stranger = PendingJob("stranger");
  stranger.id = 7;
  Status s = store->SaveJob(stranger, {Event(7, 20, "placed")});
  EXPECT_EQ(s.code(), StatusCode::kNotFound) << s.ToString();

  auto jobs = Jobs(*store);
  ASSERT_EQ(jobs.size(), 1u);
  ExpectSameJob(jobs[0], *existing);
  EXPECT_TRUE(Events(*store, 7).empty());
  EXPECT_EQ(Events(*store, existing->id).size(), 1u);
  // Nor does it take an id.
  auto next = store->CreateJob(PendingJob(), {});
  ASSERT_TRUE(next.ok());
  EXPECT_EQ(next->id, 2);
}

TEST_P(StateStoreContract, TextThatIsNotUtf8IsRefusedAndLeavesTheStoreUsable) {
  auto store = Open();
  ASSERT_NE(store, nullptr);
  Job bad = PendingJob();
  bad.spec.name = "caf\xe9";  // Latin-1, not UTF-8: JSON cannot carry it
  auto refused = store->CreateJob(bad, {});
  EXPECT_EQ(refused.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(refused.status().message().find("UTF-8"), std::string::npos);
  // Nothing was stored, and the store takes the next write as if nothing had happened (a
  // transaction left open would refuse it).
  EXPECT_TRUE(Jobs(*store).empty());
  auto created = store->CreateJob(PendingJob(), {});
  ASSERT_TRUE(created.ok()) << created.status().ToString();
  Job changed = *created;
  changed.message = "bad \xff byte";
  EXPECT_EQ(store->SaveJob(changed, {}).code(), StatusCode::kInvalidArgument);
  ExpectSameJob(Jobs(*store).at(0), *created);
  EXPECT_TRUE(store->SaveTeam(TeamQuota{"vision", 1, std::nullopt}).ok());
  EXPECT_EQ(store->LoadTeams()->size(), 1u);
}

TEST_P(StateStoreContract, SaveIsAllOrNothing) {
  auto store = Open();
  ASSERT_NE(store, nullptr);
  auto created = store->CreateJob(PendingJob(), {Event(0, 10, "submitted")});
  ASSERT_TRUE(created.ok());

  // One event cannot be stored (its text is not UTF-8), so neither is the change it came with,
  // nor the events before it.
  Job job = *created;
  job.state = JobState::kRunning;
  Status s = store->SaveJob(job, {Event(job.id, 20, "running"), Event(job.id, 21, "bad \xff")});
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument) << s.ToString();
  EXPECT_NE(s.message().find("UTF-8"), std::string::npos) << s.message();

  auto jobs = Jobs(*store);
  ASSERT_EQ(jobs.size(), 1u);
  ExpectSameJob(jobs[0], *created);
  ExpectSameEvents(Events(*store, job.id), {Event(job.id, 10, "submitted")});
  // An event with a text that is not UTF-8 cannot come in through CreateJob either.
  auto refused = store->CreateJob(PendingJob(), {Event(0, 10, "caf\xe9")});
  EXPECT_EQ(refused.status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(Jobs(*store).size(), 1u);
  EXPECT_TRUE(Events(*store, 2).empty());
}

TEST_P(StateStoreContract, AnEventOfAnotherJobIsRefused) {
  auto store = Open();
  ASSERT_NE(store, nullptr);
  auto a = store->CreateJob(PendingJob("a"), {Event(0, 10, "submitted")});
  auto b = store->CreateJob(PendingJob("b"), {Event(0, 11, "submitted")});
  ASSERT_TRUE(a.ok() && b.ok());

  // Saving job a with an event that names b (or no job at all) is a caller's bug: filing it
  // under either job would put a wrong line in someone's history, so nothing is stored.
  Job changed = *a;
  changed.state = JobState::kRunning;
  for (JobId other : {b->id, JobId{99}}) {
    SCOPED_TRACE("event of job " + std::to_string(other));
    Status s = store->SaveJob(changed, {Event(a->id, 20, "running"), Event(other, 21, "misfiled")});
    EXPECT_EQ(s.code(), StatusCode::kInvalidArgument) << s.ToString();
    EXPECT_NE(s.message().find("job " + std::to_string(other)), std::string::npos) << s.message();
  }
  auto jobs = Jobs(*store);
  ASSERT_EQ(jobs.size(), 2u);
  ExpectSameJob(jobs[0], *a);
  ExpectSameJob(jobs[1], *b);
  ExpectSameEvents(Events(*store, a->id), {Event(a->id, 10, "submitted")});
  ExpectSameEvents(Events(*store, b->id), {Event(b->id, 11, "submitted")});
  EXPECT_TRUE(Events(*store, 99).empty());
  // The store takes the next, correct save.
  ASSERT_TRUE(store->SaveJob(changed, {Event(a->id, 20, "running")}).ok());
  ExpectSameEvents(Events(*store, a->id),
                   {Event(a->id, 10, "submitted"), Event(a->id, 20, "running")});
}

TEST_P(StateStoreContract, DurationsRoundTripToTheMicrosecond) {
  auto store = Open();
  ASSERT_NE(store, nullptr);
  // Duration counts microseconds; none may be lost on the way to the store and back.
  const std::vector<std::pair<Duration, Duration>> cases = {
      {Duration(1), Duration(0)},                    // max_runtime, grace_period
      {Duration(999), Duration(1)},                  // under a millisecond
      {Duration(1'001), Duration(59'999'999)},       // a millisecond and a bit; just under 1m
      {Duration(3'600'000'007), Duration(123'457)},  // 1h and 7us; 123.457ms
      {Duration(90'061'000'001), Duration(3'600'000'000)},  // 1d1h1m1s and 1us; 1h
  };
  std::vector<Job> saved;
  for (const auto& [max_runtime, grace] : cases) {
    Job job = PendingJob();
    job.spec.max_runtime = max_runtime;
    job.spec.grace_period = grace;
    auto created = store->CreateJob(job, {});
    ASSERT_TRUE(created.ok()) << created.status().ToString();
    saved.push_back(*created);
  }
  // And through SaveJob.
  Job changed = saved[0];
  changed.spec.max_runtime = Duration(7'000'003);
  changed.spec.grace_period = Duration(29'999'999);
  ASSERT_TRUE(store->SaveJob(changed, {}).ok());
  saved[0] = changed;

  auto jobs = Jobs(*store);
  ASSERT_EQ(jobs.size(), saved.size());
  for (size_t i = 0; i < saved.size(); ++i) {
    SCOPED_TRACE("job " + std::to_string(saved[i].id));
    EXPECT_EQ(jobs[i].spec.max_runtime, saved[i].spec.max_runtime);
    EXPECT_EQ(jobs[i].spec.grace_period, saved[i].spec.grace_period);
    ExpectSameJob(jobs[i], saved[i]);
  }
}

TEST_P(StateStoreContract, AJobThatWouldNotLoadBackIsRefused) {
  auto store = Open();
  ASSERT_NE(store, nullptr);
  auto created = store->CreateJob(PendingJob(), {Event(0, 10, "submitted")});
  ASSERT_TRUE(created.ok());

  // A spec with no task is no job spec: stored, it would stop every later LoadJobs, so the
  // master could not start.
  Job broken = PendingJob("broken");
  broken.spec.tasks.clear();
  auto refused = store->CreateJob(broken, {Event(0, 10, "submitted")});
  EXPECT_EQ(refused.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(refused.status().message().find("would not load back"), std::string::npos)
      << refused.status().ToString();
  broken.id = created->id;
  Status s = store->SaveJob(broken, {Event(created->id, 20, "broken")});
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument) << s.ToString();

  auto jobs = Jobs(*store);
  ASSERT_EQ(jobs.size(), 1u);
  ExpectSameJob(jobs[0], *created);
  ExpectSameEvents(Events(*store, created->id), {Event(created->id, 10, "submitted")});
}

TEST_P(StateStoreContract, JobRoundTripsEveryField) {
  auto store = Open();
  ASSERT_NE(store, nullptr);
  Job full = FullJob();
  auto created = store->CreateJob(full, {});
  ASSERT_TRUE(created.ok()) << created.status().ToString();
  full.id = created->id;
  auto loaded = Jobs(*store);
  ASSERT_EQ(loaded.size(), 1u);
  ExpectSameJob(loaded[0], full);

  // And through SaveJob, from a job with every optional field empty.
  auto pending = store->CreateJob(PendingJob(), {});
  ASSERT_TRUE(pending.ok());
  Job saved = FullJob();
  saved.id = pending->id;
  ASSERT_TRUE(store->SaveJob(saved, {}).ok());
  loaded = Jobs(*store);
  ASSERT_EQ(loaded.size(), 2u);
  ExpectSameJob(loaded[1], saved);

  // And back to empty: a field cleared is cleared, not left as it was.
  Job cleared = PendingJob();
  cleared.id = pending->id;
  ASSERT_TRUE(store->SaveJob(cleared, {}).ok());
  loaded = Jobs(*store);
  ASSERT_EQ(loaded.size(), 2u);
  ExpectSameJob(loaded[1], cleared);
}

TEST_P(StateStoreContract, EventsAreKeptPerJobInOrder) {
  auto store = Open();
  ASSERT_NE(store, nullptr);
  auto a = store->CreateJob(PendingJob("a"), {Event(0, 1, "submitted")});
  auto b = store->CreateJob(PendingJob("b"), {Event(0, 2, "submitted")});
  ASSERT_TRUE(a.ok() && b.ok());
  // Interleaved, and out of time order: the order is the order they were stored in.
  ASSERT_TRUE(store->SaveJob(*b, {Event(b->id, 50, "b1")}).ok());
  ASSERT_TRUE(store->SaveJob(*a, {Event(a->id, 40, "a1"), Event(a->id, 30, "a2")}).ok());
  ASSERT_TRUE(store->SaveJob(*b, {Event(b->id, 20, "b2")}).ok());
  ASSERT_TRUE(store->SaveJob(*a, {Event(a->id, 10, "a3")}).ok());

  ExpectSameEvents(Events(*store, a->id), {Event(a->id, 1, "submitted"), Event(a->id, 40, "a1"),
                                           Event(a->id, 30, "a2"), Event(a->id, 10, "a3")});
  ExpectSameEvents(Events(*store, b->id),
                   {Event(b->id, 2, "submitted"), Event(b->id, 50, "b1"), Event(b->id, 20, "b2")});
  // A job that does not exist has no events; that is not an error.
  auto none = store->LoadEvents(99);
  ASSERT_TRUE(none.ok()) << none.status().ToString();
  EXPECT_TRUE(none->empty());
}

// The API pages a job's events (docs/api.md, "Events"): a range skips the first `after`, stops
// at `limit` or once the text read reaches `max_bytes` (one event at least), and says whether
// more remain.
TEST_P(StateStoreContract, EventsAreReadInRanges) {
  auto store = Open();
  ASSERT_NE(store, nullptr);
  auto job = store->CreateJob(PendingJob("a"), {Event(0, 0, "e0", "0123456789")});
  ASSERT_TRUE(job.ok());
  for (int i = 1; i < 10; ++i) {
    ASSERT_TRUE(
        store->SaveJob(*job, {Event(job->id, i, fmt::format("e{}", i), "0123456789")}).ok());
  }
  auto read = [&](state::EventRange range) {
    auto page = store->ReadEvents(job->id, range);
    EXPECT_TRUE(page.ok()) << page.status().ToString();
    std::string types;
    for (const auto& e : page->events) types += e.type;
    return std::make_pair(types, page->more);
  };
  EXPECT_EQ(read({}), std::make_pair(std::string("e0e1e2e3e4e5e6e7e8e9"), false));
  EXPECT_EQ(read({.after = 3, .limit = 4}), std::make_pair(std::string("e3e4e5e6"), true));
  EXPECT_EQ(read({.after = 7, .limit = 4}), std::make_pair(std::string("e7e8e9"), false));
  EXPECT_EQ(read({.after = 6, .limit = 4}), std::make_pair(std::string("e6e7e8e9"), false));
  EXPECT_EQ(read({.after = 10}), std::make_pair(std::string(), false));
  EXPECT_EQ(read({.after = 99}), std::make_pair(std::string(), false));
  // 12 bytes an event (type and message): 30 bytes are reached by the third.
  EXPECT_EQ(read({.after = 1, .max_bytes = 30}), std::make_pair(std::string("e1e2e3"), true));
  EXPECT_EQ(read({.after = 2, .max_bytes = 1}), std::make_pair(std::string("e2"), true));
  EXPECT_EQ(read({.after = 9, .max_bytes = 1}), std::make_pair(std::string("e9"), false));
  auto none = store->ReadEvents(99, {.limit = 5});
  ASSERT_TRUE(none.ok());
  EXPECT_TRUE(none->events.empty());
  EXPECT_FALSE(none->more);
}

TEST_P(StateStoreContract, TeamsAreUpsertedListedByNameAndDeleted) {
  auto store = Open();
  ASSERT_NE(store, nullptr);
  ASSERT_TRUE(store->SaveTeam(TeamQuota{"vision", 16, 24}).ok());
  ASSERT_TRUE(store->SaveTeam(TeamQuota{"nlp", 8, std::nullopt}).ok());
  ASSERT_TRUE(store->SaveTeam(TeamQuota{"nlp-b", 0, 0}).ok());
  ASSERT_TRUE(store->SaveTeam(TeamQuota{"Zeta", 1, 2}).ok());
  ASSERT_TRUE(store->SaveTeam(TeamQuota{"vision", 12, std::nullopt}).ok());  // replaces

  // By name, byte by byte: upper case before lower case, a prefix before what extends it.
  auto teams = Teams(*store);
  ASSERT_EQ(teams.size(), 4u);
  EXPECT_EQ(teams[0].name, "Zeta");
  EXPECT_EQ(teams[0].guaranteed_gpus, 1);
  EXPECT_EQ(teams[0].max_gpus, std::optional<int64_t>(2));
  EXPECT_EQ(teams[1].name, "nlp");
  EXPECT_EQ(teams[1].guaranteed_gpus, 8);
  EXPECT_FALSE(teams[1].max_gpus.has_value());
  EXPECT_EQ(teams[2].name, "nlp-b");
  EXPECT_EQ(teams[2].max_gpus, std::optional<int64_t>(0));  // a limit of 0 is not "no limit"
  EXPECT_EQ(teams[3].name, "vision");
  EXPECT_EQ(teams[3].guaranteed_gpus, 12);
  EXPECT_FALSE(teams[3].max_gpus.has_value());

  ASSERT_TRUE(store->DeleteTeam("nlp").ok());
  EXPECT_EQ(store->DeleteTeam("nlp").code(), StatusCode::kNotFound);
  EXPECT_EQ(store->DeleteTeam("never").code(), StatusCode::kNotFound);
  EXPECT_EQ(TeamNames(*store), (std::vector<std::string>{"Zeta", "nlp-b", "vision"}));
  // A deleted team can come back.
  ASSERT_TRUE(store->SaveTeam(TeamQuota{"nlp", 2, 4}).ok());
  EXPECT_EQ(TeamNames(*store), (std::vector<std::string>{"Zeta", "nlp", "nlp-b", "vision"}));
}

TEST_P(StateStoreContract, UsersRoundTripWithTheirTeamsAndAreDeleted) {
  auto store = Open();
  ASSERT_NE(store, nullptr);
  User ada{"ada",        false, {{"vision", TeamRole::kAdmin}, {"nlp", TeamRole::kViewer}},
           1001,         1001,  "vision",
           FromMicros(5)};
  User root{"root", true, {}, std::nullopt, std::nullopt, std::nullopt, FromMicros(1)};
  ASSERT_TRUE(store->SaveUser(ada).ok());
  ASSERT_TRUE(store->SaveUser(root).ok());
  auto users = store->LoadUsers();
  ASSERT_TRUE(users.ok()) << users.status().ToString();
  ASSERT_EQ(users->size(), 2u);
  EXPECT_EQ((*users)[0].name, "ada");
  EXPECT_FALSE((*users)[0].admin);
  EXPECT_EQ((*users)[0].teams, ada.teams);
  EXPECT_EQ((*users)[0].uid, std::optional<int64_t>(1001));
  EXPECT_EQ((*users)[0].default_team, std::optional<std::string>("vision"));
  EXPECT_EQ((*users)[0].created_at, FromMicros(5));
  EXPECT_TRUE((*users)[1].admin);
  EXPECT_FALSE((*users)[1].uid.has_value());
  EXPECT_FALSE((*users)[1].default_team.has_value());

  // Replacing keeps the creation time and drops the teams not given again.
  ada.teams = {{"nlp", TeamRole::kMember}};
  ada.uid.reset();
  ada.created_at = FromMicros(99);
  ASSERT_TRUE(store->SaveUser(ada).ok());
  users = store->LoadUsers();
  ASSERT_TRUE(users.ok());
  EXPECT_EQ((*users)[0].teams, ada.teams);
  EXPECT_FALSE((*users)[0].uid.has_value());
  EXPECT_EQ((*users)[0].created_at, FromMicros(5));

  ASSERT_TRUE(store->DeleteUser("ada").ok());
  EXPECT_EQ(store->DeleteUser("ada").code(), StatusCode::kNotFound);
  EXPECT_EQ(store->LoadUsers()->size(), 1u);

  User bad{"eve", false, {{"\xff", TeamRole::kMember}}, {}, {}, {}, FromMicros(1)};
  EXPECT_EQ(store->SaveUser(bad).code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(store->LoadUsers()->size(), 1u);
}

TEST_P(StateStoreContract, TokensKeepTheirHashAndRevocation) {
  auto store = Open();
  ASSERT_NE(store, nullptr);
  TokenRecord a{"00000000000000aa", TokenKind::kUser, "ada",       "laptop", std::string(64, 'a'),
                FromMicros(10),     FromMicros(1000), std::nullopt};
  TokenRecord n{"00000000000000bb",   TokenKind::kNode, "node-1",     "",
                std::string(64, 'b'), FromMicros(20),   std::nullopt, std::nullopt};
  ASSERT_TRUE(store->SaveToken(n).ok());
  ASSERT_TRUE(store->SaveToken(a).ok());
  a.revoked_at = FromMicros(500);
  ASSERT_TRUE(store->SaveToken(a).ok());
  auto tokens = store->LoadTokens();
  ASSERT_TRUE(tokens.ok()) << tokens.status().ToString();
  ASSERT_EQ(tokens->size(), 2u);
  const TokenRecord& got = (*tokens)[0];
  EXPECT_EQ(got.id, a.id);
  EXPECT_EQ(got.kind, TokenKind::kUser);
  EXPECT_EQ(got.subject, "ada");
  EXPECT_EQ(got.description, "laptop");
  EXPECT_EQ(got.hash, a.hash);
  EXPECT_EQ(got.created_at, FromMicros(10));
  EXPECT_EQ(got.expires_at, std::optional<Timestamp>(FromMicros(1000)));
  EXPECT_EQ(got.revoked_at, std::optional<Timestamp>(FromMicros(500)));
  EXPECT_EQ((*tokens)[1].kind, TokenKind::kNode);
  EXPECT_FALSE((*tokens)[1].expires_at.has_value());
  EXPECT_FALSE((*tokens)[1].revoked_at.has_value());
}

TEST_P(StateStoreContract, DeletedTokensAreGoneAndDeletingTwiceIsFine) {
  auto store = Open();
  ASSERT_NE(store, nullptr);
  TokenRecord a{"00000000000000aa",   TokenKind::kUser, "ada",        "",
                std::string(64, 'a'), FromMicros(10),   std::nullopt, FromMicros(20)};
  TokenRecord b = a;
  b.id = "00000000000000bb";
  ASSERT_TRUE(store->SaveToken(a).ok());
  ASSERT_TRUE(store->SaveToken(b).ok());
  ASSERT_TRUE(store->DeleteToken(a.id).ok());
  ASSERT_TRUE(store->DeleteToken(a.id).ok());
  auto tokens = store->LoadTokens();
  ASSERT_TRUE(tokens.ok()) << tokens.status().ToString();
  ASSERT_EQ(tokens->size(), 1u);
  EXPECT_EQ((*tokens)[0].id, b.id);
}

TEST_P(StateStoreContract, SecretsAreUpsertedListedByScopeOwnerAndNameAndDeleted) {
  auto store = Open();
  ASSERT_NE(store, nullptr);
  // A value as large as allowed, of every kind of UTF-8 text an environment variable may hold.
  std::string big = "line one\nzwei: ünïcode ✓\t" + std::string(kMaxSecretValueBytes - 32, 'k');
  big.resize(kMaxSecretValueBytes, 'x');
  Secret team{SecretScope::kTeam, "vision", "wandb", "team-value", FromMicros(30)};
  Secret ada_wandb{SecretScope::kUser, "ada", "wandb", big, FromMicros(10)};
  Secret ada_hf{SecretScope::kUser, "ada", "hf", "hf-value", FromMicros(20)};
  Secret bob{SecretScope::kUser, "bob", "wandb", "bob-value", FromMicros(40)};
  for (const Secret& s : {team, bob, ada_wandb, ada_hf}) {
    ASSERT_TRUE(store->SaveSecret(s).ok()) << s.name;
  }
  auto loaded = store->LoadSecrets();
  ASSERT_TRUE(loaded.ok()) << loaded.status().ToString();
  ASSERT_EQ(loaded->size(), 4u);
  auto expect = [](const Secret& got, const Secret& want) {
    EXPECT_EQ(got.scope, want.scope);
    EXPECT_EQ(got.owner, want.owner);
    EXPECT_EQ(got.name, want.name);
    EXPECT_TRUE(got.value == want.value) << "the value of " << want.owner << "/" << want.name;
    EXPECT_EQ(got.updated_at, want.updated_at);
  };
  // Users' before teams', then by owner and name.
  expect((*loaded)[0], ada_hf);
  expect((*loaded)[1], ada_wandb);
  expect((*loaded)[2], bob);
  expect((*loaded)[3], team);

  // Saving again replaces the value and the time.
  ada_hf.value = "rotated";
  ada_hf.updated_at = FromMicros(99);
  ASSERT_TRUE(store->SaveSecret(ada_hf).ok());
  loaded = store->LoadSecrets();
  ASSERT_TRUE(loaded.ok());
  ASSERT_EQ(loaded->size(), 4u);
  expect((*loaded)[0], ada_hf);

  // The scope is part of the key: a team named like a user is another owner.
  EXPECT_EQ(store->DeleteSecret(SecretScope::kTeam, "ada", "wandb").code(), StatusCode::kNotFound);
  ASSERT_TRUE(store->DeleteSecret(SecretScope::kUser, "ada", "wandb").ok());
  EXPECT_EQ(store->DeleteSecret(SecretScope::kUser, "ada", "wandb").code(), StatusCode::kNotFound);
  loaded = store->LoadSecrets();
  ASSERT_TRUE(loaded.ok());
  ASSERT_EQ(loaded->size(), 3u);
  expect((*loaded)[0], ada_hf);
  expect((*loaded)[2], team);
  // A deleted secret can come back.
  ASSERT_TRUE(store->SaveSecret(ada_wandb).ok());
  EXPECT_EQ(store->LoadSecrets()->size(), 4u);
}

TEST_P(StateStoreContract, SecretsThatCouldNotBeUsedAreRefusedWithoutQuotingThem) {
  auto store = Open();
  ASSERT_NE(store, nullptr);
  Secret good{SecretScope::kUser, "ada", "wandb", "hunter2", FromMicros(1)};
  ASSERT_TRUE(store->SaveSecret(good).ok());
  std::vector<Secret> bad(6, good);
  bad[0].value = "";
  bad[1].value = "hunter2\xff";
  bad[2].value = std::string("hunter2\0b", 9);
  bad[3].value = std::string(kMaxSecretValueBytes + 1, 'h');
  bad[4].name = "no/slash";
  bad[5].owner = "";
  for (size_t i = 0; i < bad.size(); ++i) {
    Status s = store->SaveSecret(bad[i]);
    EXPECT_EQ(s.code(), StatusCode::kInvalidArgument) << i;
    EXPECT_EQ(s.message().find("hunter2"), std::string::npos) << s.message();
  }
  // Nothing of them was stored; the store takes the next write.
  auto loaded = store->LoadSecrets();
  ASSERT_TRUE(loaded.ok());
  ASSERT_EQ(loaded->size(), 1u);
  EXPECT_EQ((*loaded)[0].value, "hunter2");
  EXPECT_TRUE(store->SaveSecret(Secret{SecretScope::kTeam, "vision", "w", "v", {}}).ok());
}

TEST_P(StateStoreContract, SecretsSurviveReopen) {
  {
    auto store = Open();
    ASSERT_NE(store, nullptr);
    ASSERT_TRUE(store->SaveSecret({SecretScope::kUser, "ada", "wandb", "v1", FromMicros(5)}).ok());
    ASSERT_TRUE(store->SaveSecret({SecretScope::kTeam, "nlp", "hf", "v2", FromMicros(6)}).ok());
    ASSERT_TRUE(store->DeleteSecret(SecretScope::kTeam, "nlp", "hf").ok());
  }
  auto store = Open();
  ASSERT_NE(store, nullptr);
  auto loaded = store->LoadSecrets();
  ASSERT_TRUE(loaded.ok());
  ASSERT_EQ(loaded->size(), 1u);
  EXPECT_EQ((*loaded)[0].owner, "ada");
  EXPECT_EQ((*loaded)[0].value, "v1");
  EXPECT_EQ((*loaded)[0].updated_at, FromMicros(5));
}

TEST_P(StateStoreContract, NodesRoundTripAndComeBackUnreachable) {
  auto store = Open();
  ASSERT_NE(store, nullptr);
  Node b = FullNode("node-b");
  Node a = FullNode("node-a");
  a.info.gpus.pop_back();
  a.info.gpu_links.clear();
  a.info.labels.clear();
  ASSERT_TRUE(store->SaveNode(b).ok());
  ASSERT_TRUE(store->SaveNode(a).ok());

  auto nodes = Nodes(*store);  // by id
  ASSERT_EQ(nodes.size(), 2u);
  ExpectSameNode(nodes[0], a);
  ExpectSameNode(nodes[1], b);
  // The state is not stored: a loaded node is unreachable until its agent syncs again.
  EXPECT_EQ(nodes[0].state, NodeState::kUnreachable);
  EXPECT_EQ(nodes[1].state, NodeState::kUnreachable);

  // Saving a node again replaces it.
  b.info.address = "10.0.0.2";
  b.info.agent_version = "0.2.0";
  b.last_seen = FromMicros(1'700'000'009'000'000);
  ASSERT_TRUE(store->SaveNode(b).ok());
  nodes = Nodes(*store);
  ASSERT_EQ(nodes.size(), 2u);
  ExpectSameNode(nodes[1], b);

  // A drain is kept, with its reason, and so is undraining.
  a.drained = true;
  a.drain_reason = "disk errors; ticket 42";
  a.info.instance = "5f0c";
  ASSERT_TRUE(store->SaveNode(a).ok());
  ExpectSameNode(Nodes(*store).at(0), a);
  a.drained = false;
  a.drain_reason.clear();
  ASSERT_TRUE(store->SaveNode(a).ok());
  ExpectSameNode(Nodes(*store).at(0), a);
}

TEST_P(StateStoreContract, DeletedNodesAreGone) {
  auto store = Open();
  ASSERT_NE(store, nullptr);
  ASSERT_TRUE(store->SaveNode(FullNode("node-a")).ok());
  ASSERT_TRUE(store->SaveNode(FullNode("node-b")).ok());
  ASSERT_TRUE(store->DeleteNode("node-a").ok());
  EXPECT_EQ(store->DeleteNode("node-a").code(), StatusCode::kNotFound);
  auto nodes = Nodes(*store);
  ASSERT_EQ(nodes.size(), 1u);
  EXPECT_EQ(nodes[0].info.id, "node-b");
  // A deleted node can come back.
  ASSERT_TRUE(store->SaveNode(FullNode("node-a")).ok());
  EXPECT_EQ(Nodes(*store).size(), 2u);
}

TEST_P(StateStoreContract, OddButValidNodesRoundTrip) {
  auto store = Open();
  ASSERT_NE(store, nullptr);
  std::vector<Node> nodes;
  // The least a node can be: one thousandth of a CPU, one byte, no GPUs, one port, no labels.
  Node least;
  least.info.id = "a";
  least.info.address = "::1";
  least.info.milli_cpus = 1;
  least.info.memory_bytes = 1;
  least.info.ports = PortRange{1, 1};
  least.registered_at = FromMicros(1);
  least.last_seen = FromMicros(1);
  nodes.push_back(least);
  // Awkward numbers and names.
  Node odd = FullNode("b.node-\u00e9t\u00e9");
  odd.info.address = "[fe80::1%eth0]";
  odd.info.milli_cpus = 123'456'789'123;  // a thousandth past a double's easy decimals
  odd.info.memory_bytes = (int64_t{1} << 62) + 1;
  odd.info.ports = PortRange{65535, 65535};
  odd.info.labels = {{"", ""}, {"a=b", "c,d"}, {"\u65e5\u672c", "\u00fc"}, {"sp ace", " "}};
  odd.info.gpus[0].memory_bytes = 0;
  odd.info.gpus[0].uuid = "";
  odd.info.gpus[0].numa_node = -1;
  odd.info.gpus[1].memory_bytes = 1;
  odd.info.gpu_links.push_back(GpuLink{1, 0, GpuLinkType::kPcieHostBridge, 0});
  odd.info.gpu_source = "";
  odd.info.agent_version = "";
  nodes.push_back(odd);
  // Many GPUs, each pair linked.
  Node wide = FullNode("c");
  wide.info.milli_cpus = 999;
  wide.info.gpus.clear();
  wide.info.gpu_links.clear();
  for (int i = 0; i < 16; ++i) {
    wide.info.gpus.push_back(Gpu{i, "GPU-" + std::to_string(i), "A100", 40LL << 30, "", i % 2});
    for (int j = 0; j < i; ++j) {
      wide.info.gpu_links.push_back(GpuLink{j, i, static_cast<GpuLinkType>((i + j) % 4), i});
    }
  }
  nodes.push_back(wide);
  for (const auto& n : nodes) {
    Status s = store->SaveNode(n);
    EXPECT_TRUE(s.ok()) << n.info.id << ": " << s.ToString();
  }
  auto loaded = Nodes(*store);
  ASSERT_EQ(loaded.size(), nodes.size());
  for (size_t i = 0; i < nodes.size(); ++i) {
    ExpectSameNode(loaded[i], nodes[i]);
    EXPECT_EQ(loaded[i].info.milli_cpus, nodes[i].info.milli_cpus);
    EXPECT_EQ(loaded[i].info.memory_bytes, nodes[i].info.memory_bytes);
  }
  // And again after a restart, which is where a node that does not load back would stop the
  // master.
  store.reset();
  store = Open();
  ASSERT_NE(store, nullptr);
  EXPECT_EQ(Nodes(*store).size(), nodes.size());
}

TEST_P(StateStoreContract, OddNodesLoadBackExactlyAsSavedAndUnstorableOnesAreRefused) {
  auto store = Open();
  ASSERT_NE(store, nullptr);
  ASSERT_TRUE(store->SaveNode(FullNode("good")).ok());

  // Whether a node may register is ValidateNodeInfo's to say, at registration; whatever a store
  // accepts must load back as it was saved, or the master could not start.
  std::vector<Node> odd;
  odd.push_back(FullNode("no-address"));
  odd.back().info.address = "";
  odd.push_back(FullNode("no-ports"));
  odd.back().info.ports = PortRange{0, 0};
  odd.push_back(FullNode("gpus-out-of-order"));
  odd.back().info.gpus[0].index = 1;
  odd.push_back(FullNode("negative-cpus"));
  odd.back().info.milli_cpus = -1;
  for (const auto& n : odd) {
    Status s = store->SaveNode(n);
    if (!s.ok()) {
      // Refusing is allowed, but only saying why.
      EXPECT_EQ(s.code(), StatusCode::kInvalidArgument) << n.info.id << ": " << s.ToString();
      EXPECT_NE(s.message().find("cannot be stored"), std::string::npos) << s.message();
    }
  }
  auto nodes = Nodes(*store);
  for (const auto& loaded : nodes) {
    for (const auto& n : odd) {
      if (n.info.id == loaded.info.id) ExpectSameNode(loaded, n);
    }
  }
  // Text JSON cannot carry is refused, and does not replace what was stored under that id.
  Node worse = FullNode("good");
  worse.info.address = "caf\xe9";
  EXPECT_FALSE(store->SaveNode(worse).ok());
  for (const auto& loaded : Nodes(*store)) {
    if (loaded.info.id == "good") ExpectSameNode(loaded, FullNode("good"));
  }
}

TEST_P(StateStoreContract, LoadsReturnCopies) {
  auto store = Open();
  ASSERT_NE(store, nullptr);
  auto created = store->CreateJob(FullJob(), {Event(0, 10, "submitted")});
  ASSERT_TRUE(created.ok());
  ASSERT_TRUE(store->SaveTeam(TeamQuota{"vision", 16, 24}).ok());
  ASSERT_TRUE(store->SaveNode(FullNode("node-a")).ok());

  auto jobs = Jobs(*store);
  auto events = Events(*store, created->id);
  auto teams = Teams(*store);
  auto nodes = Nodes(*store);
  ASSERT_TRUE(!jobs.empty() && !events.empty() && !teams.empty() && !nodes.empty());
  jobs[0].state = JobState::kKilled;
  jobs[0].tasks.clear();
  events[0].type = "changed";
  teams[0].guaranteed_gpus = 0;
  nodes[0].info.gpus.clear();

  ExpectSameJob(Jobs(*store).at(0), *created);
  ExpectSameEvents(Events(*store, created->id), {Event(created->id, 10, "submitted")});
  EXPECT_EQ(Teams(*store).at(0).guaranteed_gpus, 16);
  ExpectSameNode(Nodes(*store).at(0), FullNode("node-a"));
}

TEST_P(StateStoreContract, EverythingSurvivesReopen) {
  Job first, second;
  int schema_version = 0;
  {
    auto store = Open();
    ASSERT_NE(store, nullptr);
    schema_version = store->SchemaVersion();
    auto a = store->CreateJob(FullJob(), {Event(0, 10, "submitted")});
    auto b = store->CreateJob(PendingJob(), {});
    ASSERT_TRUE(a.ok() && b.ok());
    first = *a;
    first.version = 5;
    ASSERT_TRUE(store->SaveJob(first, {Event(first.id, 20, "placed")}).ok());
    second = *b;
    ASSERT_TRUE(store->SaveTeam(TeamQuota{"vision", 16, 24}).ok());
    ASSERT_TRUE(store->SaveTeam(TeamQuota{"nlp", 8, std::nullopt}).ok());
    ASSERT_TRUE(store->DeleteTeam("nlp").ok());
    ASSERT_TRUE(store->SaveNode(FullNode("node-a")).ok());
  }
  auto store = Open();
  ASSERT_NE(store, nullptr);
  EXPECT_EQ(store->SchemaVersion(), schema_version);
  auto jobs = Jobs(*store);
  ASSERT_EQ(jobs.size(), 2u);
  ExpectSameJob(jobs[0], first);
  ExpectSameJob(jobs[1], second);
  ExpectSameEvents(Events(*store, first.id),
                   {Event(first.id, 10, "submitted"), Event(first.id, 20, "placed")});
  auto teams = Teams(*store);
  ASSERT_EQ(teams.size(), 1u);
  EXPECT_EQ(teams[0].name, "vision");
  EXPECT_EQ(teams[0].max_gpus, std::optional<int64_t>(24));
  auto nodes = Nodes(*store);
  ASSERT_EQ(nodes.size(), 1u);
  ExpectSameNode(nodes[0], FullNode("node-a"));
  // Ids keep counting where they were.
  auto third = store->CreateJob(PendingJob(), {});
  ASSERT_TRUE(third.ok());
  EXPECT_EQ(third->id, 3);
}

// --- Accounting ---

namespace contract {

inline std::vector<state::TaskUsage> Holds(state::StateStore& store, const state::UsageScan& scan) {
  std::vector<state::TaskUsage> holds;
  Status s = store.ScanUsage(scan, [&](const state::TaskUsage& u) { holds.push_back(u); });
  EXPECT_TRUE(s.ok()) << s.ToString();
  std::sort(holds.begin(), holds.end(), [](const auto& a, const auto& b) {
    return std::tie(a.job_id, a.attempt, a.task, a.start) <
           std::tie(b.job_id, b.attempt, b.task, b.start);
  });
  return holds;
}

// "submitted 1 @100", "attempt 2 of 1 @300 (submitted @100)", "finished 1 SUCCEEDED @400".
inline std::vector<std::string> Milestones(state::StateStore& store, const state::UsageScan& scan) {
  std::vector<std::string> out;
  Status s = store.ScanMilestones(scan, [&](const state::JobMilestone& m) {
    using Kind = state::JobMilestone::Kind;
    std::string who = m.team + "/" + m.user;
    switch (m.kind) {
      case Kind::kSubmitted:
        out.push_back(fmt::format("submitted {} {} @{}", m.job_id, who, ToMicros(m.at)));
        break;
      case Kind::kAttemptStarted:
        out.push_back(fmt::format("attempt {} of {} {} @{} (submitted @{})", m.attempt, m.job_id,
                                  who, ToMicros(m.at), ToMicros(m.submitted_at)));
        break;
      case Kind::kFinished:
        out.push_back(fmt::format("finished {} {} {} @{}", m.job_id, who,
                                  JobStateName(m.final_state), ToMicros(m.at)));
        break;
    }
  });
  EXPECT_TRUE(s.ok()) << s.ToString();
  std::sort(out.begin(), out.end());
  return out;
}

inline state::UsageScan Range(int64_t since, int64_t until, std::string team = "",
                              std::string user = "") {
  return state::UsageScan{FromMicros(since), FromMicros(until), std::move(team), std::move(user)};
}

inline state::TaskUsage Hold(JobId job, int attempt, std::string task, int64_t start,
                             std::optional<int64_t> end = std::nullopt) {
  state::TaskUsage u{job, attempt, std::move(task),   "vision",    "ada",
                     2,   4000,    FromMicros(start), std::nullopt};
  if (end) u.end = FromMicros(*end);
  return u;
}

}  // namespace contract

TEST_P(StateStoreContract, TaskHoldsAreSavedWithTheJobAndScannedByOverlap) {
  using contract::Hold;
  using contract::Holds;
  using contract::Range;
  auto store = Open();
  ASSERT_NE(store, nullptr);
  auto job = store->CreateJob(PendingJob(), {});
  ASSERT_TRUE(job.ok());
  JobId id = job->id;
  ASSERT_TRUE(
      store->SaveJob(*job, {}, {Hold(id, 1, "worker/0", 100), Hold(id, 1, "worker/1", 100)}).ok());
  auto open = Holds(*store, Range(0, 1000));
  ASSERT_EQ(open.size(), 2u);
  EXPECT_EQ(open[0].task, "worker/0");
  EXPECT_EQ(open[0].team, "vision");
  EXPECT_EQ(open[0].user, "ada");
  EXPECT_EQ(open[0].gpus, 2);
  EXPECT_EQ(open[0].milli_cpus, 4000);
  EXPECT_EQ(open[0].start, FromMicros(100));
  EXPECT_EQ(open[0].end, std::nullopt);
  // An open hold runs on: any range after its start overlaps it.
  EXPECT_EQ(Holds(*store, Range(5000, 6000)).size(), 2u);
  EXPECT_TRUE(Holds(*store, Range(0, 100)).empty());

  // Writing the hold again sets its end; the other one stays open.
  ASSERT_TRUE(store->SaveJob(*job, {}, {Hold(id, 1, "worker/0", 100, 400)}).ok());
  auto ended = Holds(*store, Range(0, 1000));
  ASSERT_EQ(ended.size(), 2u);
  EXPECT_EQ(ended[0].end, std::optional<Timestamp>(FromMicros(400)));
  EXPECT_EQ(ended[1].end, std::nullopt);
  // [100, 400) overlaps [399, 401) and [0, 101), not [400, ...).
  EXPECT_EQ(Holds(*store, Range(399, 401)).size(), 2u);
  EXPECT_EQ(Holds(*store, Range(0, 101)).size(), 2u);
  auto later = Holds(*store, Range(400, 1000));
  ASSERT_EQ(later.size(), 1u);
  EXPECT_EQ(later[0].task, "worker/1");

  // The same task again in the same attempt (an elastic replica grown back) is another hold.
  ASSERT_TRUE(store->SaveJob(*job, {}, {Hold(id, 1, "worker/0", 500)}).ok());
  EXPECT_EQ(Holds(*store, Range(0, 1000)).size(), 3u);
  EXPECT_EQ(Holds(*store, Range(0, 1000, "vision", "ada")).size(), 3u);
  EXPECT_TRUE(Holds(*store, Range(0, 1000, "nlp")).empty());
  EXPECT_TRUE(Holds(*store, Range(0, 1000, "", "bob")).empty());
}

TEST_P(StateStoreContract, AHoldOfAnotherJobOrEndingBeforeItStartsIsRefused) {
  using contract::Hold;
  auto store = Open();
  ASSERT_NE(store, nullptr);
  auto job = store->CreateJob(PendingJob(), {});
  ASSERT_TRUE(job.ok());
  Job changed = *job;
  changed.message = "changed";
  Status other = store->SaveJob(changed, {}, {Hold(job->id + 1, 1, "worker/0", 100)});
  EXPECT_EQ(other.code(), StatusCode::kInvalidArgument);
  Status backwards = store->SaveJob(changed, {}, {Hold(job->id, 1, "worker/0", 100, 50)});
  EXPECT_EQ(backwards.code(), StatusCode::kInvalidArgument);
  // Nothing of either save was stored.
  EXPECT_TRUE(contract::Holds(*store, contract::Range(0, 1000)).empty());
  EXPECT_EQ(Jobs(*store).at(0).message, job->message);
}

TEST_P(StateStoreContract, MilestonesComeFromTheJobsAsSaved) {
  using contract::Milestones;
  using contract::Range;
  auto store = Open();
  ASSERT_NE(store, nullptr);
  Job pending = PendingJob();
  pending.submitted_at = FromMicros(100);
  auto job = store->CreateJob(pending, {});
  ASSERT_TRUE(job.ok());
  Job j = *job;
  j.state = JobState::kStarting;
  j.attempt = 1;
  j.placed_at = FromMicros(250);
  ASSERT_TRUE(store->SaveJob(j, {}).ok());
  j.state = JobState::kRunning;  // saved again: still one attempt
  ASSERT_TRUE(store->SaveJob(j, {}).ok());
  j.state = JobState::kPending;  // requeued
  j.placed_at.reset();
  j.history.push_back(AttemptSummary{1, FromMicros(250), FromMicros(280), "failed: worker/0", {}});
  ASSERT_TRUE(store->SaveJob(j, {}).ok());
  j.state = JobState::kStarting;
  j.attempt = 2;
  j.placed_at = FromMicros(300);
  ASSERT_TRUE(store->SaveJob(j, {}).ok());
  j.state = JobState::kSucceeded;
  j.finished_at = FromMicros(400);
  ASSERT_TRUE(store->SaveJob(j, {}).ok());
  auto other = store->CreateJob(PendingJob(), {});  // submitted at 1'700'000'000'123'456
  ASSERT_TRUE(other.ok());

  EXPECT_EQ(Milestones(*store, Range(0, 1000)),
            (std::vector<std::string>{
                "attempt 1 of 1 vision/ada @250 (submitted @100)",
                "attempt 2 of 1 vision/ada @300 (submitted @100)",
                "finished 1 vision/ada SUCCEEDED @400",
                "submitted 1 vision/ada @100",
            }));
  EXPECT_EQ(Milestones(*store, Range(250, 400)),
            (std::vector<std::string>{"attempt 1 of 1 vision/ada @250 (submitted @100)",
                                      "attempt 2 of 1 vision/ada @300 (submitted @100)"}));
  EXPECT_TRUE(Milestones(*store, Range(0, 1000, "nlp")).empty());
  EXPECT_TRUE(Milestones(*store, Range(0, 1000, "", "bob")).empty());
  EXPECT_EQ(Milestones(*store, Range(1'700'000'000'000'000, 1'800'000'000'000'000)),
            (std::vector<std::string>{"submitted 2 vision/ada @1700000000123456"}));
}

// --- Audit ---

namespace contract {

inline state::AuditEntry Entry(int64_t time, std::string user, std::string path) {
  state::AuditEntry e;
  e.time = FromMicros(time);
  e.user = std::move(user);
  e.remote = "10.0.0.7:40000";
  e.method = "POST";
  e.path = std::move(path);
  e.target = "";
  return e;
}

inline std::vector<std::string> Paths(const std::vector<state::AuditEntry>& entries) {
  std::vector<std::string> paths;
  for (const auto& e : entries) paths.push_back(e.path);
  return paths;
}

inline std::vector<state::AuditEntry> Audit(state::StateStore& store, int64_t since, int64_t until,
                                            std::string user = "", int64_t limit = 100,
                                            std::string target = "") {
  auto entries = store.LoadAudit(state::AuditQuery{FromMicros(since), FromMicros(until),
                                                   std::move(user), limit, std::move(target)});
  EXPECT_TRUE(entries.ok()) << entries.status().ToString();
  return entries.ok() ? *entries : std::vector<state::AuditEntry>{};
}

}  // namespace contract

TEST_P(StateStoreContract, AuditEntriesAreAppendedCompletedAndQueried) {
  using contract::Audit;
  using contract::Entry;
  using contract::Paths;
  auto store = Open();
  ASSERT_NE(store, nullptr);
  auto a = store->BeginAudit(Entry(100, "ada", "/a"));
  auto b = store->BeginAudit(Entry(200, "bob", "/b"));
  auto c = store->BeginAudit(Entry(300, "ada", "/c"));
  ASSERT_TRUE(a.ok() && b.ok() && c.ok());
  EXPECT_LT(*a, *b);
  EXPECT_LT(*b, *c);
  ASSERT_TRUE(store->FinishAudit(*a, 201, "job 4", "").ok());
  ASSERT_TRUE(store->FinishAudit(*b, 409, "job 4", "failed_precondition: job 4 has ended").ok());

  auto all = Audit(*store, 0, 1000);
  ASSERT_EQ(all.size(), 3u);
  EXPECT_EQ(all[0].seq, *a);
  EXPECT_EQ(all[0].time, FromMicros(100));
  EXPECT_EQ(all[0].user, "ada");
  EXPECT_EQ(all[0].remote, "10.0.0.7:40000");
  EXPECT_EQ(all[0].method, "POST");
  EXPECT_EQ(all[0].path, "/a");
  EXPECT_EQ(all[0].target, "job 4");
  EXPECT_EQ(all[0].status, std::optional<int>(201));
  EXPECT_EQ(all[1].outcome, "failed_precondition: job 4 has ended");
  EXPECT_EQ(all[2].status, std::nullopt);  // never completed
  EXPECT_EQ(all[2].outcome, "");

  // The newest `limit`, oldest first; by time and by user.
  EXPECT_EQ(Paths(Audit(*store, 0, 1000, "", 2)), (std::vector<std::string>{"/b", "/c"}));
  EXPECT_EQ(Paths(Audit(*store, 100, 300)), (std::vector<std::string>{"/a", "/b"}));
  EXPECT_EQ(Paths(Audit(*store, 0, 1000, "ada")), (std::vector<std::string>{"/a", "/c"}));
  EXPECT_EQ(Paths(Audit(*store, 0, 1000, "ada", 1)), (std::vector<std::string>{"/c"}));
  // By what they are about (cohort audit --job).
  EXPECT_EQ(Paths(Audit(*store, 0, 1000, "", 100, "job 4")),
            (std::vector<std::string>{"/a", "/b"}));
  EXPECT_EQ(Paths(Audit(*store, 0, 1000, "bob", 100, "job 4")), (std::vector<std::string>{"/b"}));
  EXPECT_TRUE(Audit(*store, 0, 1000, "", 100, "job 40").empty());

  EXPECT_EQ(store->FinishAudit(*c + 100, 200, "", "").code(), StatusCode::kNotFound);
  state::AuditEntry bad = Entry(400, "ada", std::string("/\xff\xfe"));
  EXPECT_EQ(store->BeginAudit(bad).status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(Audit(*store, 0, 1000).size(), 3u);
}

TEST_P(StateStoreContract, AuditPruningTakesTheOldestFirstAndAtMostAsMany) {
  using contract::Audit;
  using contract::Entry;
  using contract::Paths;
  auto store = Open();
  ASSERT_NE(store, nullptr);
  for (int i = 1; i <= 5; ++i) {
    ASSERT_TRUE(store->BeginAudit(Entry(i * 100, "ada", "/" + std::to_string(i))).ok());
  }
  auto pruned = store->PruneAudit(FromMicros(400), 2);  // three are older; two may go
  ASSERT_TRUE(pruned.ok());
  EXPECT_EQ(*pruned, 2);
  EXPECT_EQ(Paths(Audit(*store, 0, 1000)), (std::vector<std::string>{"/3", "/4", "/5"}));
  pruned = store->PruneAudit(FromMicros(400), 10);
  ASSERT_TRUE(pruned.ok());
  EXPECT_EQ(*pruned, 1);
  EXPECT_EQ(Paths(Audit(*store, 0, 1000)), (std::vector<std::string>{"/4", "/5"}));
  // Numbers are never reused.
  auto next = store->BeginAudit(Entry(600, "ada", "/6"));
  ASSERT_TRUE(next.ok());
  EXPECT_GT(*next, Audit(*store, 0, 1000).at(1).seq);
}

TEST_P(StateStoreContract, HoldsAndAuditSurviveReopen) {
  {
    auto store = Open();
    ASSERT_NE(store, nullptr);
    auto job = store->CreateJob(PendingJob(), {});
    ASSERT_TRUE(job.ok());
    ASSERT_TRUE(store->SaveJob(*job, {}, {contract::Hold(job->id, 1, "worker/0", 100)}).ok());
    auto seq = store->BeginAudit(contract::Entry(100, "ada", "/a"));
    ASSERT_TRUE(seq.ok());
    ASSERT_TRUE(store->FinishAudit(*seq, 200, "team vision", "").ok());
  }
  auto store = Open();
  ASSERT_NE(store, nullptr);
  auto holds = contract::Holds(*store, contract::Range(0, 1000));
  ASSERT_EQ(holds.size(), 1u);
  EXPECT_EQ(holds[0].end, std::nullopt);
  auto audit = contract::Audit(*store, 0, 1000);
  ASSERT_EQ(audit.size(), 1u);
  EXPECT_EQ(audit[0].target, "team vision");
  EXPECT_EQ(audit[0].status, std::optional<int>(200));
}

// --- Runtime history ---

namespace contract {

inline std::vector<RuntimeHistoryRow> History(state::StateStore& store) {
  auto rows = store.LoadRuntimeHistory();
  EXPECT_TRUE(rows.ok()) << rows.status().ToString();
  return rows.ok() ? *rows : std::vector<RuntimeHistoryRow>{};
}

}  // namespace contract

TEST_P(StateStoreContract, RuntimeHistoryIsWrittenWithTheJobsEndAndSurvivesReopen) {
  const RuntimeHistoryRow fine{"t=vision|u=ada|n=bert|g=4", 1, 3600.5, 1};
  const RuntimeHistoryRow all{"*", 1, 3600.5, 2};
  {
    auto store = Open();
    ASSERT_NE(store, nullptr);
    EXPECT_TRUE(contract::History(*store).empty());
    auto job = store->CreateJob(PendingJob(), {});
    ASSERT_TRUE(job.ok());
    job->state = JobState::kSucceeded;
    ASSERT_TRUE(store->SaveJob(*job, {Event(job->id, 10, "finished")}, {}, {{all, fine}, 0}).ok());
    EXPECT_EQ(contract::History(*store), (std::vector<RuntimeHistoryRow>{all, fine}));
    // Another end: "*" changes, a new key comes, and the rows last used before 3 go, after
    // the change's own rows are written (so "*", used again, stays).
    auto other = store->CreateJob(PendingJob("other"), {});
    ASSERT_TRUE(other.ok());
    other->state = JobState::kFailed;
    const RuntimeHistoryRow all2{"*", 2, 1800.25, 4};
    const RuntimeHistoryRow new_key{"t=vision|g=2", 1, 0, 3};
    ASSERT_TRUE(store->SaveJob(*other, {}, {}, {{new_key, all2}, 3}).ok());
    EXPECT_EQ(contract::History(*store), (std::vector<RuntimeHistoryRow>{all2, new_key}));
  }
  auto store = Open();
  ASSERT_NE(store, nullptr);
  EXPECT_EQ(contract::History(*store),
            (std::vector<RuntimeHistoryRow>{{"*", 2, 1800.25, 4}, {"t=vision|g=2", 1, 0, 3}}));
}

TEST_P(StateStoreContract, ARuntimeHistoryRowThatWouldNotLoadBackIsRefusedWithTheJob) {
  auto store = Open();
  ASSERT_NE(store, nullptr);
  auto job = store->CreateJob(PendingJob(), {});
  ASSERT_TRUE(job.ok());
  const RuntimeHistoryRow good{"*", 1, 60, 1};
  ASSERT_TRUE(store->SaveJob(*job, {}, {}, {{good}, 0}).ok());
  Job ended = *job;
  ended.state = JobState::kSucceeded;
  for (const RuntimeHistoryRow& bad :
       {RuntimeHistoryRow{"", 1, 60, 2}, RuntimeHistoryRow{"g=1", 0, 60, 2},
        RuntimeHistoryRow{"g=1", 1, -1, 2}, RuntimeHistoryRow{"g=1", 1, std::nan(""), 2},
        RuntimeHistoryRow{"g=1", 1, 60, 0}, RuntimeHistoryRow{"t=caf\xe9|g=1", 1, 60, 2}}) {
    SCOPED_TRACE(bad.key);
    Status s = store->SaveJob(ended, {Event(job->id, 10, "finished")}, {},
                              {{RuntimeHistoryRow{"*", 2, 30, 3}, bad}, 2});
    EXPECT_EQ(s.code(), StatusCode::kInvalidArgument) << s.ToString();
  }
  // Nothing of the refused writes is stored: not the job's end, not its events, not the rows.
  EXPECT_EQ(Jobs(*store).at(0).state, JobState::kPending);
  EXPECT_TRUE(Events(*store, job->id).empty());
  EXPECT_EQ(contract::History(*store), std::vector<RuntimeHistoryRow>{good});
  // Nor of a job that does not exist.
  Job unknown = ended;
  unknown.id = 99;
  EXPECT_EQ(store->SaveJob(unknown, {}, {}, {{RuntimeHistoryRow{"g=1", 1, 60, 5}}, 0}).code(),
            StatusCode::kNotFound);
  EXPECT_EQ(contract::History(*store), std::vector<RuntimeHistoryRow>{good});
}

// --- Sweeps ---

TEST_P(StateStoreContract, SweepsAreSavedReplacedAndSurviveReopen) {
  SweepRecord sweep{7,
                    "digits",
                    "vision",
                    "ada",
                    "RUNNING",
                    FromMicros(1000),
                    std::nullopt,
                    nlohmann::json{{"trials", nlohmann::json::array({1, 2})}}};
  {
    auto store = Open();
    ASSERT_NE(store, nullptr);
    ASSERT_TRUE(store->SaveSweep(sweep).ok());
    sweep.state = "COMPLETED";
    sweep.finished_at = FromMicros(5000);
    sweep.doc["trials"].push_back(3);
    ASSERT_TRUE(store->SaveSweep(sweep).ok());
    SweepRecord other = sweep;
    other.id = 3;
    ASSERT_TRUE(store->SaveSweep(other).ok());
    // Refused whole: text that is not UTF-8, and an id that is not positive.
    SweepRecord bad = sweep;
    bad.doc["note"] = "caf\xe9";
    EXPECT_EQ(store->SaveSweep(bad).code(), StatusCode::kInvalidArgument);
    bad = sweep;
    bad.id = 0;
    EXPECT_EQ(store->SaveSweep(bad).code(), StatusCode::kInvalidArgument);
  }
  auto store = Open();
  ASSERT_NE(store, nullptr);
  auto loaded = store->LoadSweeps();
  ASSERT_TRUE(loaded.ok()) << loaded.status().ToString();
  ASSERT_EQ(loaded->size(), 2u);
  EXPECT_EQ((*loaded)[0].id, 3);
  const SweepRecord& back = (*loaded)[1];
  EXPECT_EQ(back.id, 7);
  EXPECT_EQ(back.name, "digits");
  EXPECT_EQ(back.team, "vision");
  EXPECT_EQ(back.user, "ada");
  EXPECT_EQ(back.state, "COMPLETED");
  EXPECT_EQ(back.created_at, FromMicros(1000));
  EXPECT_EQ(back.finished_at, std::optional<Timestamp>(FromMicros(5000)));
  EXPECT_EQ(back.doc, sweep.doc);
}

}  // namespace cohort::testing
