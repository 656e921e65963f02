#include "os/disk_space.h"

#include <gtest/gtest.h>
#include <sys/statvfs.h>

#include <filesystem>

namespace cohort {
namespace {

TEST(StatDiskSpace, ReadsTheFreeSpaceOfTheDirectorysFileSystem) {
  std::string dir = std::filesystem::temp_directory_path().string();
  auto disk = StatDiskSpace(dir);
  auto free = disk->FreeBytes();
  ASSERT_TRUE(free.ok()) << free.status().ToString();
  struct statvfs fs {};
  ASSERT_EQ(::statvfs(dir.c_str(), &fs), 0);
  uint64_t expected = static_cast<uint64_t>(fs.f_bavail) * fs.f_frsize;
  // Other writers on the machine move it a little between the two reads.
  EXPECT_NEAR(static_cast<double>(*free), static_cast<double>(expected), 64.0 * 1024 * 1024);
  EXPECT_GT(*free, 0u);
  EXPECT_EQ(disk->where(), dir);
}

TEST(StatDiskSpace, AMissingDirectoryIsAnErrorNamingIt) {
  auto free = StatDiskSpace("/no/such/cohort/dir")->FreeBytes();
  ASSERT_FALSE(free.ok());
  EXPECT_NE(free.status().message().find("/no/such/cohort/dir"), std::string::npos);
}

}  // namespace
}  // namespace cohort
