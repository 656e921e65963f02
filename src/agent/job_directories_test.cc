#include "agent/job_directories.h"

#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>

namespace cohort::agent {
namespace {

namespace fs = std::filesystem;

class JobDirectoriesTest : public ::testing::Test {
 protected:
  JobDirectoriesTest()
      : root_(fs::temp_directory_path() /
              ("cohort-jobdirs-test-" + std::to_string(::getpid()) + "-" +
               ::testing::UnitTest::GetInstance()->current_test_info()->name())) {
    fs::remove_all(root_);
    launch_.id = TaskId{7, 1, "worker", 0};
    std::string base = (root_ / "jobs" / "7").string();
    launch_.checkpoint_dir = base + "/checkpoints";
    launch_.output_dir = base + "/outputs";
    launch_.log_dir = base + "/logs";
  }
  ~JobDirectoriesTest() override { fs::remove_all(root_); }

  struct stat Stat(const std::string& p) {
    struct stat st {};
    EXPECT_EQ(::lstat(p.c_str(), &st), 0) << p;
    return st;
  }

  fs::path root_;
  TaskLaunch launch_;
};

TEST_F(JobDirectoriesTest, ARootAgentGivesThemToTheAccountAgainAndAgain) {
  if (::geteuid() != 0) GTEST_SKIP() << "giving a directory away needs root";
  // The master made them first, root's and open (as create_directories does).
  fs::create_directories(launch_.checkpoint_dir);
  ASSERT_EQ(::chmod(launch_.checkpoint_dir.c_str(), 0755), 0);
  Account nobody{65534, 65534, "nobody", "/nonexistent"};
  for (int task = 0; task < 2; ++task) {  // every task of the job does the same
    auto dirs = PrepareJobDirectories(launch_, nobody, /*as_root=*/true);
    ASSERT_TRUE(dirs.ok()) << dirs.status().ToString();
    EXPECT_EQ(*dirs, (std::vector<std::string>{launch_.checkpoint_dir, launch_.output_dir,
                                               launch_.log_dir}));
    for (const auto& [path, mode] :
         {std::pair{launch_.checkpoint_dir, 0700u}, std::pair{launch_.output_dir, 0750u},
          std::pair{launch_.log_dir, 0700u}}) {
      EXPECT_EQ(Stat(path).st_mode & 07777, mode) << path;
      EXPECT_EQ(Stat(path).st_uid, 65534u) << path;
      EXPECT_EQ(Stat(path).st_gid, 65534u) << path;
    }
  }
}

TEST_F(JobDirectoriesTest, AnAgentThatIsNotRootCreatesThemAsItsOwn) {
  Account self{::geteuid(), ::getegid(), "self", "/"};
  auto dirs = PrepareJobDirectories(launch_, self, /*as_root=*/false);
  ASSERT_TRUE(dirs.ok()) << dirs.status().ToString();
  EXPECT_EQ(Stat(launch_.output_dir).st_mode & 07777, 0750u);
  EXPECT_EQ(Stat(launch_.output_dir).st_uid, ::geteuid());
}

TEST_F(JobDirectoriesTest, NoOtherDirectoryIsEverGivenAway) {
  Account self{::geteuid(), ::getegid(), "ada", "/"};
  auto refused = [&](std::string TaskLaunch::*field, const std::string& path) {
    TaskLaunch l = launch_;
    l.*field = path;
    auto dirs = PrepareJobDirectories(l, self, ::geteuid() == 0);
    EXPECT_FALSE(dirs.ok()) << path;
    return dirs.ok() ? std::string() : dirs.status().message();
  };
  EXPECT_EQ(refused(&TaskLaunch::checkpoint_dir, "/etc"),
            "the job's checkpoints directory \"/etc\" does not end in /7/checkpoints: the agent "
            "gives a job's user no other directory");
  EXPECT_EQ(refused(&TaskLaunch::output_dir, "/srv/jobs/8/outputs"),
            "the job's outputs directory \"/srv/jobs/8/outputs\" does not end in /7/outputs: the "
            "agent gives a job's user no other directory");
  EXPECT_EQ(refused(&TaskLaunch::log_dir, "jobs/7/logs"),
            "the job's logs directory \"jobs/7/logs\" is not an absolute path");
  EXPECT_EQ(refused(&TaskLaunch::log_dir, "/srv/jobs/7/logs/../../../../etc/7/logs"),
            "the job's logs directory \"/srv/jobs/7/logs/../../../../etc/7/logs\" must not "
            "contain a '.' or '..' component");
  EXPECT_FALSE(fs::exists(root_)) << "nothing was created";
}

TEST_F(JobDirectoriesTest, ASymbolicLinkInPlaceOfADirectoryIsRefused) {
  fs::create_directories(root_ / "jobs" / "7");
  fs::create_directories(root_ / "elsewhere");
  fs::create_directory_symlink(root_ / "elsewhere", launch_.checkpoint_dir);
  Account self{::geteuid(), ::getegid(), "ada", "/"};
  auto dirs = PrepareJobDirectories(launch_, self, ::geteuid() == 0);
  ASSERT_FALSE(dirs.ok());
  EXPECT_EQ(dirs.status().message(),
            "cannot give the job's checkpoints directory to ada: " + launch_.checkpoint_dir +
                ": is a symbolic link, not a directory");
}

TEST_F(JobDirectoriesTest, ALaunchWithoutDirectoriesNeedsNone) {
  TaskLaunch l;
  l.id = launch_.id;
  auto dirs = PrepareJobDirectories(l, Account{::geteuid(), ::getegid(), "a", "/"}, false);
  ASSERT_TRUE(dirs.ok());
  EXPECT_TRUE(dirs->empty());
}

}  // namespace
}  // namespace cohort::agent
