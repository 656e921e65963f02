#include "os/memory_cgroup.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstring>

namespace cohort {
namespace {

bool NoV2Memory(const std::string&) { return false; }
bool V2Memory(const std::string&) { return true; }

// This machine's layout (and CI's): v1 controllers, and a v2 mount with none.
constexpr const char* kHybrid =
    "31 23 0:28 / /sys/fs/cgroup rw,relatime - tmpfs tmpfs rw,mode=755\n"
    "32 31 0:29 / /sys/fs/cgroup/cpu rw,relatime - cgroup cgroup rw,cpu\n"
    "35 31 0:32 / /sys/fs/cgroup/memory rw,relatime shared:9 - cgroup cgroup rw,memory\n"
    "41 31 0:38 / /sys/fs/cgroup/unified rw,relatime - cgroup2 cgroup2 rw\n";
// A plain server's: v2 alone.
constexpr const char* kUnified =
    "22 1 8:1 / / rw,relatime shared:1 - ext4 /dev/sda1 rw\n"
    "30 25 0:26 / /sys/fs/cgroup rw,nosuid,nodev,noexec,relatime shared:4 - cgroup2 cgroup2 "
    "rw,nsdelegate,memory_recursiveprot\n";

TEST(FindMemoryMount, AHybridLayoutUsesTheV1MemoryController) {
  auto m = FindMemoryMount(kHybrid, V2Memory);
  ASSERT_TRUE(m.has_value());
  EXPECT_EQ(m->version, CgroupVersion::kV1);
  EXPECT_EQ(m->mount_point, "/sys/fs/cgroup/memory");
}

TEST(FindMemoryMount, AUnifiedLayoutUsesV2OnlyWithTheMemoryController) {
  auto m = FindMemoryMount(kUnified, V2Memory);
  ASSERT_TRUE(m.has_value());
  EXPECT_EQ(m->version, CgroupVersion::kV2);
  EXPECT_EQ(m->mount_point, "/sys/fs/cgroup");
  EXPECT_FALSE(FindMemoryMount(kUnified, NoV2Memory).has_value());
  EXPECT_FALSE(FindMemoryMount("", V2Memory).has_value());
  EXPECT_FALSE(FindMemoryMount("garbage - cgroup\n", V2Memory).has_value());
}

TEST(MemoryText, ReadsAsAPersonWritesIt) {
  EXPECT_EQ(MemoryText(int64_t{64} << 20), "64 MiB");
  EXPECT_EQ(MemoryText(int64_t{3} << 29), "1.5 GiB");
  EXPECT_EQ(MemoryText(512), "512 bytes");
}

// The real thing, where this machine allows it (root, a memory controller): a process that
// joins a 64 MiB group and touches 300 MiB is killed by the kernel, and the group says so.
TEST(MemoryCgroup, AProcessPastItsLimitIsKilledAndCounted) {
  auto parent = MemoryCgroups::Find();
  if (!parent.ok()) GTEST_SKIP() << "no usable memory controller: " << parent.status().message();
  auto group =
      MemoryCgroup::Create(*parent, "os-test-" + std::to_string(::getpid()), int64_t{64} << 20);
  ASSERT_TRUE(group.ok()) << group.status().ToString();
  EXPECT_EQ(group->OomKills().value_or(-1), 0);
  const std::string join = group->JoinFile();
  pid_t child = ::fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    int fd = ::open(join.c_str(), O_WRONLY);
    if (fd < 0 || ::write(fd, "0", 1) != 1) _exit(3);
    ::close(fd);
    const size_t size = size_t{300} << 20;
    void* p = ::mmap(nullptr, size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED) _exit(4);
    std::memset(p, 1, size);
    _exit(0);
  }
  int status = 0;
  ASSERT_EQ(::waitpid(child, &status, 0), child);
  ASSERT_TRUE(WIFSIGNALED(status)) << "exit status " << status;
  EXPECT_EQ(WTERMSIG(status), SIGKILL);
  EXPECT_GE(group->OomKills().value_or(0), 1);
  EXPECT_TRUE(group->Remove().ok());
  EXPECT_NE(::access(group->path().c_str(), F_OK), 0);
}

}  // namespace
}  // namespace cohort
