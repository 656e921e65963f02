// The task sampler: its sums and rates over a made-up /proc tree, where every figure is known,
// and once over the real /proc, with a child that burns a core.
#include "agent/task_sampler.h"

#include <fmt/format.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <thread>

#include "os/process.h"

namespace cohort::agent {
namespace {

namespace fs = std::filesystem;
using std::chrono::seconds;

constexpr int64_t kTicks = 100;  // per second
constexpr int64_t kPage = 4096;

// A /proc of processes described by hand: pid, parent, ticks, ticks of reaped children, pages.
class FakeProc {
 public:
  FakeProc()
      : root_(fs::temp_directory_path() /
              ("cohort-fake-proc-" + std::to_string(::getpid()) + "-" +
               ::testing::UnitTest::GetInstance()->current_test_info()->name())) {
    fs::remove_all(root_);
    fs::create_directories(root_ / "self");  // not a process: skipped
  }
  ~FakeProc() { fs::remove_all(root_); }

  void Set(pid_t pid, pid_t ppid, int64_t ticks, int64_t child_ticks, int64_t pages) {
    fs::create_directories(root_ / std::to_string(pid));
    // The command name holds a space and a parenthesis, as a task's may.
    std::ofstream(root_ / std::to_string(pid) / "stat") << fmt::format(
        "{} (py (worker) 1) S {} {} {} 0 -1 4194304 100 0 0 0 {} {} {} {} 20 0 1 0 100 123456 {} "
        "18446744073709551615 1 1 0 0 0 0 0 0 0 0 0 0 17 3 0 0 0 0 0\n",
        pid, ppid, pid, pid, ticks / 2, ticks - ticks / 2, child_ticks / 2,
        child_ticks - child_ticks / 2, pages);
  }
  void Remove(pid_t pid) { fs::remove_all(root_ / std::to_string(pid)); }
  std::string root() const { return root_.string(); }

 private:
  fs::path root_;
};

const TaskId kTask{1, 1, "worker", 0};
const Timestamp kStart = FromMicros(1'700'000'000'000'000);

TEST(ProcTaskSampler, SumsTheSupervisorsDescendantsAndRatesTheirTicks) {
  FakeProc proc;
  proc.Set(1, 0, 0, 0, 10);
  proc.Set(100, 1, 7, 50, 100);      // the supervisor: its own ticks and pages are Cohort's
  proc.Set(101, 100, 200, 0, 1000);  // the task's command
  proc.Set(102, 101, 100, 0, 500);   // a worker it started
  proc.Set(103, 100, 100, 0, 250);   // an orphan the supervisor adopted (a daemon)
  proc.Set(200, 1, 1000, 0, 9999);   // someone else
  ProcTaskSampler sampler(proc.root(), kTicks, kPage);

  auto first = sampler.Sample({{kTask, 100}}, kStart);
  ASSERT_EQ(first.size(), 1u);
  EXPECT_EQ(first[kTask].at, kStart);
  EXPECT_EQ(first[kTask].rss_bytes, (1000 + 500 + 250) * kPage);
  EXPECT_FALSE(first[kTask].milli_cpus.has_value()) << "no rate without an earlier sample";

  // In 5 s: the command used 5 s of CPU, the worker 2.5 s and then ended; the command reaped
  // it, so its ticks moved into the command's reaped children's.
  proc.Set(101, 100, 700, 350, 1000);
  proc.Remove(102);
  auto second = sampler.Sample({{kTask, 100}}, kStart + seconds(5));
  EXPECT_EQ(second[kTask].milli_cpus, 1500);  // (500 + 250) ticks / 100 / 5 s
  EXPECT_EQ(second[kTask].rss_bytes, (1000 + 250) * kPage);

  // The adopted orphan ends and the supervisor reaps it: its ticks are not lost.
  proc.Remove(103);
  proc.Set(100, 1, 7, 150, 100);
  auto third = sampler.Sample({{kTask, 100}}, kStart + seconds(10));
  EXPECT_EQ(third[kTask].milli_cpus, 0);
}

TEST(ProcTaskSampler, NeverARateBelowZeroAndForgetsWhatItIsNotAskedAbout) {
  FakeProc proc;
  proc.Set(100, 1, 0, 0, 1);
  proc.Set(101, 100, 500, 0, 10);
  ProcTaskSampler sampler(proc.root(), kTicks, kPage);
  sampler.Sample({{kTask, 100}}, kStart);
  // A process that left the tree (reaped elsewhere) takes its ticks with it.
  proc.Set(101, 100, 100, 0, 10);
  EXPECT_EQ(sampler.Sample({{kTask, 100}}, kStart + seconds(5))[kTask].milli_cpus, 0);
  // Not asked about once: the next sample starts afresh.
  EXPECT_TRUE(sampler.Sample({}, kStart + seconds(10)).empty());
  EXPECT_FALSE(sampler.Sample({{kTask, 100}}, kStart + seconds(15))[kTask].milli_cpus);
  // A supervisor that is gone gives no sample at all.
  proc.Remove(100);
  EXPECT_TRUE(sampler.Sample({{kTask, 100}}, kStart + seconds(20)).empty());
}

// The real /proc: this process stands in for the supervisor of a child that spins for a
// moment. Loose bounds: the machine is shared.
// CPU ticks (user + system) the kernel has charged to `pid` so far: fields 14 and 15 of its stat.
int64_t TicksOf(pid_t pid) {
  std::ifstream in(fmt::format("/proc/{}/stat", pid));
  std::string stat((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  std::istringstream fields(stat.substr(stat.rfind(')') + 2));  // after the command name
  std::string field;
  int64_t ticks = 0;
  for (int i = 3; i <= 15 && fields >> field; ++i) {
    if (i >= 14) ticks += std::stoll(field);
  }
  return ticks;
}

TEST(ProcTaskSampler, SeesARealChildBurnACore) {
  pid_t child = ::fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    volatile uint64_t spin = 0;
    for (;;) spin = spin + 1;
  }
  ProcTaskSampler sampler;
  auto now = [] {
    return Timestamp(
        std::chrono::duration_cast<Duration>(std::chrono::system_clock::now().time_since_epoch()));
  };
  const Timestamp start = now();
  const int64_t child_before = TicksOf(child);
  sampler.Sample({{kTask, ::getpid()}}, start);
  std::this_thread::sleep_for(std::chrono::milliseconds(1500));
  const Timestamp end = now();
  auto samples = sampler.Sample({{kTask, ::getpid()}}, end);
  const int64_t child_after = TicksOf(child);
  ::kill(child, SIGKILL);
  ::waitpid(child, nullptr, 0);
  ASSERT_EQ(samples.size(), 1u);
  ASSERT_TRUE(samples[kTask].milli_cpus.has_value());
  // What the kernel charged the spinner over the same span, whatever share of a core a loaded
  // machine gave it: the sampler must see that (this test process itself adds almost nothing).
  const double seconds = std::chrono::duration<double>(end - start).count();
  const double child_milli =
      1000.0 * (child_after - child_before) / static_cast<double>(::sysconf(_SC_CLK_TCK)) / seconds;
  EXPECT_GT(child_milli, 50) << "the spinner never ran";
  EXPECT_NEAR(*samples[kTask].milli_cpus, child_milli, 150);
  EXPECT_LT(*samples[kTask].milli_cpus, 1500);
  EXPECT_GT(samples[kTask].rss_bytes, 0);
}

}  // namespace
}  // namespace cohort::agent
