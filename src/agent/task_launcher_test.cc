#include "agent/task_launcher.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

namespace cohort::agent {
namespace {

namespace fs = std::filesystem;
using ::testing::ElementsAre;
using ::testing::HasSubstr;

class TaskLauncherTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("task-launcher-" + std::to_string(::getpid()));
    fs::remove_all(dir_);
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }
  void Executable(const std::string& name) {
    std::ofstream(dir_ / name) << "#!/bin/sh\n";
    fs::permissions(dir_ / name, fs::perms::owner_all);
  }
  fs::path dir_;
};

TEST_F(TaskLauncherTest, SupervisorsRunAsTheSmallBinaryBesideCohortd) {
  Executable("cohortd");
  Executable("cohort-run-task");
  auto launcher = ProcessTaskLauncher::Create((dir_ / "cohortd").string());
  ASSERT_TRUE(launcher.ok()) << launcher.status().ToString();
  EXPECT_THAT((*launcher)->supervisor_command(), ElementsAre((dir_ / "cohort-run-task").string()));
}

TEST_F(TaskLauncherTest, WithoutItSupervisorsRunAsCohortdRunTask) {
  Executable("cohortd");
  auto launcher = ProcessTaskLauncher::Create((dir_ / "cohortd").string());
  ASSERT_TRUE(launcher.ok()) << launcher.status().ToString();
  EXPECT_THAT((*launcher)->supervisor_command(),
              ElementsAre((dir_ / "cohortd").string(), "run-task"));
}

TEST_F(TaskLauncherTest, NeitherIsAnErrorNamingBoth) {
  auto launcher = ProcessTaskLauncher::Create((dir_ / "cohortd").string());
  ASSERT_FALSE(launcher.ok());
  EXPECT_THAT(launcher.status().message(), HasSubstr("cohort-run-task"));
  EXPECT_THAT(launcher.status().message(), HasSubstr("cohortd"));
}

}  // namespace
}  // namespace cohort::agent
