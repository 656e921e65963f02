// A log stream against a real master and log store, on an io_context run by hand, with a
// responder that records what the client would get: prefixes and pieces of long lines, the
// marker for dropped output, one chunk at a time to a slow client, waiting for output that an
// agent announced, and a client that leaves.
#include "api/log_stream.h"

#include <fmt/format.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>

#include "api/asio_event_loop.h"
#include "testing/master_deps.h"
#include "testing/memory_state_store.h"

namespace cohort::api {
namespace {

namespace fs = std::filesystem;
using ::testing::HasSubstr;
using ::testing::StartsWith;

// What a client of the stream gets. A chunk is taken at once, unless the test holds them back
// (a slow client): then the stream hears of it only when the test releases it.
class RecordingResponder final : public Responder {
 public:
  void Send(HttpResponse response) override { sent_status = response.status; }
  void StartStream(int status, std::string,
                   std::vector<std::pair<std::string, std::string>> = {}) override {
    sent_status = status;
  }
  void WriteChunk(std::string data, std::function<void(bool)> done) override {
    ++chunks;
    largest_chunk = std::max(largest_chunk, data.size());
    body += data;
    if (hold) {
      held.push_back(std::move(done));
    } else {
      done(!closed_);
    }
  }
  void EndStream() override { ended = true; }
  bool closed() const override { return closed_; }
  void OnClose(std::function<void()> callback) override {
    if (closed_) return callback();
    on_close.push_back(std::move(callback));
  }
  // The client goes away.
  void Close() {
    closed_ = true;
    auto callbacks = std::move(on_close);
    for (auto& c : callbacks) c();
  }
  void ReleaseHeld() {
    auto done = std::move(held);
    for (auto& d : done) d(true);
  }

  int sent_status = 0;
  std::string body;
  int chunks = 0;
  size_t largest_chunk = 0;
  bool ended = false;
  bool hold = false;
  std::vector<std::function<void(bool)>> held;
  std::vector<std::function<void()>> on_close;

 private:
  bool closed_ = false;
};

// The master tells the streams of job changes, as the API server does.
class JobChanges final : public master::MasterListener {
 public:
  explicit JobChanges(Subscribers<JobId>& changes) : changes_(changes) {}
  void OnJobChanged(JobId id) override { changes_.Notify(id); }
  void OnNodeChanged(const std::string&) override {}

 private:
  Subscribers<JobId>& changes_;
};

class LogStreamTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() /
           ("cohort-log-stream-test-" + std::to_string(::getpid()) + "-" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(dir_);
    fs::create_directories(dir_);
  }
  void TearDown() override {
    master_.reset();
    fs::remove_all(dir_);
  }

  // A master whose job `replicas` x worker runs on node "a".
  void StartJob(int replicas, int64_t log_limit = master::kDefaultLogLimit) {
    master::MasterConfig config;
    config.data_dir = dir_.string();
    config.log_limit = log_limit;
    auto m = master::Master::Create(
        config,
        cohort::testing::TestMasterDeps(config.data_dir,
                                        std::make_unique<cohort::testing::MemoryStateStore>(),
                                        scheduler::NewScheduler({})),
        clock_, loop_);
    ASSERT_TRUE(m.ok()) << m.status().ToString();
    master_ = std::move(m).value();
    master_->SetListener(&listener_);
    NodeInfo node;
    node.id = "a";
    node.address = "127.0.0.1";
    node.milli_cpus = 32000;
    node.memory_bytes = int64_t{64} << 30;
    node.ports = PortRange{31000, 31009};
    ASSERT_TRUE(master_->nodes().Register(node).ok());
    JobSpec spec;
    spec.name = "logs";
    spec.team = "default";
    TaskGroupSpec group;
    group.role = "worker";
    group.replicas = replicas;
    group.resources = Resources{0, 100, 1 << 20};
    group.command = {"true"};
    spec.tasks.push_back(group);
    auto job = master_->Submit(spec, "ada");
    ASSERT_TRUE(job.ok()) << job.status().ToString();
    job_ = job->id;
    ioc_.poll();  // the scheduling pass
    Report(TaskState::kRunning);
    ASSERT_EQ((*master_->GetJob(job_))->state, JobState::kRunning);
  }
  // The agent reports every task of the job in `state`.
  void Report(TaskState state) {
    auto desired = master_->nodes().DesiredFor("a");
    ASSERT_TRUE(desired.ok());
    AgentReport report;
    report.applied_version = desired->version;
    std::optional<int> exit_code;
    if (state != TaskState::kRunning) exit_code = 0;
    for (const auto& t : desired->tasks) {
      report.tasks.push_back(
          TaskReport{t.id, state, exit_code, std::nullopt, 100, clock_.Now(), std::nullopt});
    }
    ASSERT_TRUE(master_->nodes().Sync("a", report).ok());
    ioc_.poll();
  }
  TaskId Task(int index) const { return TaskId{job_, 1, "worker", index}; }
  void Append(int index, int64_t offset, std::string_view data, master::LogAppend options = {}) {
    auto size = master_->logs().Append(Task(index), offset, data, options);
    ASSERT_TRUE(size.ok()) << size.status().ToString();
  }
  std::shared_ptr<LogStream> Stream(std::shared_ptr<RecordingResponder> responder, bool follow,
                                    std::chrono::milliseconds late = std::chrono::seconds(30),
                                    FollowerCount* followers = nullptr,
                                    std::optional<int64_t> tail = std::nullopt) {
    LogStream::Options options;
    options.job = job_;
    options.follow = follow;
    options.late_output_wait = late;
    options.tail = tail;
    auto stream = std::make_shared<LogStream>(ioc_, *master_, changes_, options,
                                              std::move(responder), followers);
    stream->Start();
    ioc_.poll();
    return stream;
  }

  fs::path dir_;
  boost::asio::io_context ioc_;
  AsioEventLoop loop_{ioc_};
  ManualClock clock_;
  Subscribers<JobId> changes_;
  JobChanges listener_{changes_};
  std::unique_ptr<master::Master> master_;
  JobId job_ = 0;
};

TEST_F(LogStreamTest, PrefixesTheLinesOfSeveralTasksAndCutsALongLineIntoPieces) {
  StartJob(2);
  Append(0, 0, "hello\n");
  std::string line(150 * 1024, 'x');
  Append(1, 0, line + "\nend");
  auto responder = std::make_shared<RecordingResponder>();
  Stream(responder, /*follow=*/false);
  EXPECT_TRUE(responder->ended);
  EXPECT_THAT(responder->body, StartsWith("[worker/0] hello\n[worker/1] xxx"));
  // 150 KiB: two pieces of 64 KiB and the rest, each a line of its own with its prefix.
  std::string expected = "[worker/0] hello\n";
  expected += "[worker/1] " + std::string(64 * 1024, 'x') + "\n";
  expected += "[worker/1] " + std::string(64 * 1024, 'x') + "\n";
  expected += "[worker/1] " + std::string(22 * 1024, 'x') + "\n";
  expected += "[worker/1] end\n";
  EXPECT_EQ(responder->body, expected);
}

TEST_F(LogStreamTest, SaysHowMuchWasDroppedThenSendsWhatIsKept) {
  StartJob(1, /*log_limit=*/64 * 1024);
  std::string all;
  for (int i = 0; all.size() < 300 * 1024; ++i) all += "line " + std::to_string(i) + "\n";
  for (size_t at = 0; at < all.size(); at += 10'000) {
    Append(0, static_cast<int64_t>(at), std::string_view(all).substr(at, 10'000));
  }
  auto responder = std::make_shared<RecordingResponder>();
  Stream(responder, /*follow=*/false);
  auto info = *master_->logs().Info(Task(0));
  ASSERT_GT(info.dropped(), 0);
  std::string marker = master::DroppedMarker(info.dropped(), 64 * 1024) + "\n";
  EXPECT_THAT(marker, HasSubstr("KiB of earlier output dropped (log limit 64KiB)]"));
  // The kept part may begin inside a line: that piece is a line of its own after the marker.
  EXPECT_EQ(responder->body, marker + all.substr(static_cast<size_t>(info.dropped())));
}

TEST_F(LogStreamTest, ATailStartsAtTheFirstWholeLineOfTheLastBytesAndSaysWhatCameBefore) {
  StartJob(1);
  std::string all;
  for (int i = 0; i < 1000; ++i) all += fmt::format("line {:04}\n", i);  // 10 bytes a line
  Append(0, 0, all);
  auto responder = std::make_shared<RecordingResponder>();
  Stream(responder, /*follow=*/true, std::chrono::seconds(30), nullptr, /*tail=*/95);
  // The last 95 bytes begin 5 bytes into line 990: lines 991 to 999 are shown.
  EXPECT_EQ(
      responder->body,
      "[cohort: 9910 earlier bytes not shown; ask without tail= for them]\n" + all.substr(9910));
  // Following goes on with whatever comes next.
  Append(0, static_cast<int64_t>(all.size()), "line 1000\n");
  ioc_.poll();
  EXPECT_THAT(responder->body, ::testing::EndsWith("line 0999\nline 1000\n"));

  // A tail longer than the log is the whole log, with no note.
  auto whole = std::make_shared<RecordingResponder>();
  Stream(whole, /*follow=*/false, std::chrono::seconds(30), nullptr, /*tail=*/1 << 20);
  EXPECT_EQ(whole->body, all + "line 1000\n");
}

// A slow client holds one chunk: nothing more is read until it has taken it, and a chunk is
// about a MiB whatever the log.
TEST_F(LogStreamTest, ReadsAheadOneChunkAtATime) {
  StartJob(1);
  std::string mib(1 << 20, 'y');
  for (int i = 0; i < 5; ++i) Append(0, int64_t{i} << 20, mib);
  auto responder = std::make_shared<RecordingResponder>();
  responder->hold = true;
  Stream(responder, /*follow=*/false);
  ioc_.poll();
  EXPECT_EQ(responder->chunks, 1);
  EXPECT_EQ(responder->held.size(), 1u);
  while (!responder->held.empty()) {
    responder->ReleaseHeld();
    ioc_.poll();
  }
  EXPECT_TRUE(responder->ended);
  EXPECT_EQ(responder->body.size(), (size_t{5} << 20) + 1);
  EXPECT_LE(responder->largest_chunk, (size_t{1} << 20) + 64 * 1024);
}

// The agent reported the end before all of the output was shipped, and said how long it is:
// a follower waits for the rest.
TEST_F(LogStreamTest, AFollowerWaitsForOutputAnnouncedWithTheEnd) {
  StartJob(1);
  Append(0, 0, "first\n", master::LogAppend{.skip = false, .end = 12});
  auto responder = std::make_shared<RecordingResponder>();
  auto stream = Stream(responder, /*follow=*/true);
  Report(TaskState::kSucceeded);
  ASSERT_TRUE(IsTerminal((*master_->GetJob(job_))->state));
  ioc_.poll();
  EXPECT_FALSE(responder->ended) << "6 bytes are still to come";
  Append(0, 6, "last!\n");
  ioc_.poll();
  EXPECT_TRUE(responder->ended);
  EXPECT_EQ(responder->body, "first\nlast!\n");
}

TEST_F(LogStreamTest, AFollowerGivesUpOnAnnouncedOutputThatNeverComes) {
  StartJob(1);
  Append(0, 0, "first\n", master::LogAppend{.skip = false, .end = 100});
  auto responder = std::make_shared<RecordingResponder>();
  auto stream = Stream(responder, /*follow=*/true, std::chrono::milliseconds(50));
  Report(TaskState::kSucceeded);
  ioc_.poll();
  EXPECT_FALSE(responder->ended);
  ioc_.run_for(std::chrono::milliseconds(500));
  EXPECT_TRUE(responder->ended);
  EXPECT_EQ(responder->body, "first\n[cohort: the rest of this task's output did not arrive]\n");
}

// A client that goes away while the job is silent: its follower ends at once and frees its
// place among the job's followers.
TEST_F(LogStreamTest, AFollowerWhoseClientLeftEndsAtOnce) {
  StartJob(1);
  FollowerCount followers(1);
  ASSERT_TRUE(followers.TryAdd(job_));
  auto responder = std::make_shared<RecordingResponder>();
  std::weak_ptr<LogStream> stream =
      Stream(responder, /*follow=*/true, std::chrono::seconds(30), &followers);
  EXPECT_FALSE(stream.expired()) << "its subscriptions keep a follower alive";
  EXPECT_FALSE(followers.TryAdd(job_));
  responder->Close();
  ioc_.poll();
  EXPECT_TRUE(stream.expired()) << "nothing holds it any more";
  EXPECT_TRUE(followers.TryAdd(job_));
}

}  // namespace
}  // namespace cohort::api
