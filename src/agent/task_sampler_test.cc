// The task sampler: its sums and rates over a made-up /proc tree, where every figure is known,
// and once over the real /proc, with a child that burns a core.
#include "agent/task_sampler.h"

#include <fcntl.h>
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
  // Its /proc/<pid>/io: bytes and calls read so far.
  void SetIo(pid_t pid, int64_t rchar, int64_t syscr) {
    std::ofstream(root_ / std::to_string(pid) / "io") << fmt::format(
        "rchar: {}\nwchar: 0\nsyscr: {}\nsyscw: 0\nread_bytes: 0\nwrite_bytes: 0\n"
        "cancelled_write_bytes: 0\n",
        rchar, syscr);
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

TEST(ProcTaskSampler, RatesTheReadsOfTheTreeWhoseSumOutlivesItsProcesses) {
  FakeProc proc;
  proc.Set(100, 1, 0, 0, 1);  // the supervisor
  proc.Set(101, 100, 0, 0, 1);
  proc.Set(102, 101, 0, 0, 1);
  proc.Set(200, 1, 0, 0, 1);  // someone else
  proc.SetIo(100, 500, 5);    // its spec
  proc.SetIo(101, 10'000, 10);
  proc.SetIo(102, 2'000, 2);
  proc.SetIo(200, 1'000'000, 1'000);
  ProcTaskSampler sampler(proc.root(), kTicks, kPage);
  auto first = sampler.Sample({{kTask, 100}}, kStart);
  EXPECT_FALSE(first[kTask].read_bytes_per_s.has_value()) << "no rate without an earlier sample";
  EXPECT_FALSE(first[kTask].read_calls_per_s.has_value());

  // In 5 s the command reads 50,000 bytes in 25 calls; the worker 4,000 in 4 and ends, and the
  // command reaps it: the kernel adds its figures to the command's.
  proc.SetIo(101, 10'000 + 50'000 + 6'000, 10 + 25 + 6);
  proc.Remove(102);
  proc.SetIo(200, 9'000'000, 9'000);
  auto second = sampler.Sample({{kTask, 100}}, kStart + seconds(5));
  EXPECT_EQ(second[kTask].read_bytes_per_s, (50'000 + 4'000) / 5);
  EXPECT_EQ(second[kTask].read_calls_per_s, 6);  // 29 calls / 5 s, rounded

  // The command reads 5,000 bytes more in 5 calls, ends, and the supervisor reaps it: what it
  // read counts once, neither lost nor counted again.
  proc.Remove(101);
  proc.SetIo(100, 500 + 66'000 + 5'000, 5 + 41 + 5);
  auto third = sampler.Sample({{kTask, 100}}, kStart + seconds(10));
  EXPECT_EQ(third[kTask].read_bytes_per_s, 1'000);
  EXPECT_EQ(third[kTask].read_calls_per_s, 1);

  // A process reaped outside the tree takes its figures with it: 0, never below.
  proc.Set(103, 100, 0, 0, 1);
  proc.SetIo(103, 7'000, 7);
  EXPECT_EQ(sampler.Sample({{kTask, 100}}, kStart + seconds(15))[kTask].read_calls_per_s, 1);
  proc.Remove(103);
  EXPECT_EQ(sampler.Sample({{kTask, 100}}, kStart + seconds(20))[kTask].read_calls_per_s, 0);
}

TEST(ProcTaskSampler, ReadsItCannotSeeAreAbsentNotTooLow) {
  FakeProc proc;
  proc.Set(100, 1, 0, 0, 1);
  proc.Set(101, 100, 0, 0, 1);
  proc.SetIo(100, 0, 0);
  proc.SetIo(101, 0, 0);
  ProcTaskSampler sampler(proc.root(), kTicks, kPage);
  sampler.Sample({{kTask, 100}}, kStart);
  proc.SetIo(101, 5'000, 5);
  EXPECT_EQ(sampler.Sample({{kTask, 100}}, kStart + seconds(5))[kTask].read_calls_per_s, 1);
  // A process whose figures cannot be read (here a file without them; on a real machine
  // another account's process, to an agent that may not trace it).
  proc.Set(102, 101, 0, 0, 1);
  std::ofstream(fs::path(proc.root()) / "102" / "io") << "wchar: 5\n";
  auto blind = sampler.Sample({{kTask, 100}}, kStart + seconds(10));
  ASSERT_EQ(blind.size(), 1u);
  EXPECT_TRUE(blind[kTask].milli_cpus.has_value()) << "the rest of the sample stands";
  EXPECT_FALSE(blind[kTask].read_bytes_per_s.has_value());
  EXPECT_FALSE(blind[kTask].read_calls_per_s.has_value());
  // Once it is gone, the rates come back from the next sample on.
  proc.Remove(102);
  EXPECT_FALSE(sampler.Sample({{kTask, 100}}, kStart + seconds(15))[kTask].read_calls_per_s);
  proc.SetIo(101, 10'000, 10);
  EXPECT_EQ(sampler.Sample({{kTask, 100}}, kStart + seconds(20))[kTask].read_calls_per_s, 1);
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

namespace cohort::agent {
namespace {

// The real /proc: a stand-in supervisor whose child reads a 4 KiB file over and over, as a
// loader of small files does (each read of a file is two calls: its 4,096 bytes, then the end).
TEST(ProcTaskSampler, SeesARealChildReadManySmallFiles) {
  const fs::path file = fs::temp_directory_path() / fmt::format("cohort-small-{}", ::getpid());
  std::ofstream(file) << std::string(4096, 'x');
  int started[2];
  ASSERT_EQ(::pipe(started), 0);
  pid_t supervisor = ::fork();
  ASSERT_GE(supervisor, 0);
  if (supervisor == 0) {
    ::setpgid(0, 0);  // a group of its own, which the reader joins: one kill ends both
    if (::fork() == 0) {
      char buf[65536];
      for (bool first = true;; first = false) {
        int fd = ::open(file.c_str(), O_RDONLY);
        while (::read(fd, buf, sizeof(buf)) > 0) {
        }
        ::close(fd);
        if (first && ::write(started[1], "x", 1) != 1) ::_exit(1);
      }
    }
    ::pause();
    ::_exit(0);
  }
  ::setpgid(supervisor, supervisor);  // whichever runs first
  ::close(started[1]);
  ProcTaskSampler sampler;
  auto now = [] {
    return Timestamp(
        std::chrono::duration_cast<Duration>(std::chrono::system_clock::now().time_since_epoch()));
  };
  char byte;
  ASSERT_EQ(::read(started[0], &byte, 1), 1) << "the reader never read";
  ::close(started[0]);
  sampler.Sample({{kTask, supervisor}}, now());
  std::this_thread::sleep_for(std::chrono::milliseconds(1000));
  auto samples = sampler.Sample({{kTask, supervisor}}, now());
  ::kill(-supervisor, SIGKILL);
  ::waitpid(supervisor, nullptr, 0);
  fs::remove(file);
  ASSERT_EQ(samples.size(), 1u);
  ASSERT_TRUE(samples[kTask].read_calls_per_s.has_value()) << "this process may read its own";
  ASSERT_TRUE(samples[kTask].read_bytes_per_s.has_value());
  // Loose bounds: the machine is shared, but even a slow one opens thousands of files a second.
  EXPECT_GT(*samples[kTask].read_calls_per_s, 1000);
  const double per_call = static_cast<double>(*samples[kTask].read_bytes_per_s) /
                          static_cast<double>(*samples[kTask].read_calls_per_s);
  EXPECT_NEAR(per_call, 2048, 100);
}

}  // namespace
}  // namespace cohort::agent
