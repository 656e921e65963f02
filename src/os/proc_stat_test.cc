#include "os/proc_stat.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

namespace cohort {
namespace {

namespace fs = std::filesystem;

TEST(ParseProcessStat, ReadsFieldsAfterTheLastParenthesis) {
  // A command name with a space and a ')' in it; utime 250 and stime 50 ticks, children 7 + 3,
  // start 1000 ticks after boot, 8 MiB virtual, 100 pages resident.
  auto s = ParseProcessStat(
      "4242 (we ird) x) S 1 4242 4242 0 -1 4194560 1 0 0 0 250 50 7 3 20 0 3 0 1000 8388608 100 "
      "18446744073709551615 1 1 0 0 0 0 0 0 0 0 0 0 17 0 0 0 0 0 0");
  ASSERT_TRUE(s.has_value());
  EXPECT_EQ(s->pid, 4242);
  EXPECT_EQ(s->ppid, 1);
  EXPECT_EQ(s->cpu_ticks, 300);
  EXPECT_EQ(s->child_cpu_ticks, 10);
  EXPECT_EQ(s->start_ticks, 1000);
  EXPECT_EQ(s->virtual_bytes, 8388608);
  EXPECT_EQ(s->rss_pages, 100);
}

TEST(ParseProcessStat, RefusesWhatIsNotAStatLine) {
  EXPECT_FALSE(ParseProcessStat("").has_value());
  EXPECT_FALSE(ParseProcessStat("1 (short) S 1 2").has_value());
  EXPECT_FALSE(ParseProcessStat("x (name) S 1 2 3").has_value());
  EXPECT_FALSE(ParseProcessStat("12 no parentheses S 1").has_value());
}

TEST(OwnProcess, StatFileDescriptorsAndExecutable) {
  auto own = ReadOwnStat();
  ASSERT_TRUE(own.has_value());
  EXPECT_EQ(own->pid, ::getpid());
  EXPECT_EQ(own->ppid, ::getppid());
  EXPECT_GT(own->rss_pages, 0);
  EXPECT_GT(own->virtual_bytes, 0);

  auto before = OpenFileDescriptors();
  ASSERT_TRUE(before.has_value());
  {
    std::ifstream extra("/proc/self/stat");
    EXPECT_EQ(OpenFileDescriptors(), *before + 1);
  }
  EXPECT_EQ(OpenFileDescriptors(), *before);

  std::string self = OwnExecutable();
  EXPECT_TRUE(fs::path(self).is_absolute()) << self;
  EXPECT_EQ(fs::path(self).filename(), "os_test");
}

TEST(BootTime, ReadsBtimeFromStat) {
  fs::path root = fs::temp_directory_path() / ("boot-time-" + std::to_string(::getpid()));
  fs::create_directories(root);
  std::ofstream(root / "stat") << "cpu  1 2 3\nintr 5\nbtime 1700000000\nprocesses 9\n";
  EXPECT_EQ(BootTime(root.string()), 1'700'000'000);
  std::ofstream(root / "stat") << "cpu  1 2 3\n";
  EXPECT_FALSE(BootTime(root.string()).has_value());
  fs::remove_all(root);
  auto real = BootTime();
  ASSERT_TRUE(real.has_value());
  EXPECT_GT(*real, 1'500'000'000);
}

}  // namespace
}  // namespace cohort
