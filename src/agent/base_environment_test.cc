#include "agent/base_environment.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

namespace cohort::agent {
namespace {

using ::testing::ElementsAre;

TEST(TaskEnvironment, IsTheDocumentedBaseWithTheMastersVariablesOnTop) {
  auto env = TaskEnvironment(TaskEnvironmentInputs{
      "ada", "/home/ada", "/bin/bash", "", {{"COHORT_JOB_ID", "7"}, {"PATH", "/opt/bin"}}});
  EXPECT_THAT(env, ElementsAre(std::pair<const std::string, std::string>{"COHORT_JOB_ID", "7"},
                               std::pair<const std::string, std::string>{"HOME", "/home/ada"},
                               std::pair<const std::string, std::string>{"LANG", "C.UTF-8"},
                               std::pair<const std::string, std::string>{"LOGNAME", "ada"},
                               std::pair<const std::string, std::string>{"PATH", "/opt/bin"},
                               std::pair<const std::string, std::string>{"SHELL", "/bin/bash"},
                               std::pair<const std::string, std::string>{"USER", "ada"}))
      << "no TZ when the agent has none; the spec's PATH wins";
}

TEST(TaskEnvironment, HasADefaultPathShellAndTheAgentsTimeZone) {
  auto env = TaskEnvironment(TaskEnvironmentInputs{"ada", "/home/ada", "", "UTC", {}});
  EXPECT_EQ(env["PATH"], "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin");
  EXPECT_EQ(env["SHELL"], "/bin/sh");
  EXPECT_EQ(env["TZ"], "UTC");
  EXPECT_EQ(EnvironmentStrings({{"A", "1"}, {"B", "x=y"}}),
            (std::vector<std::string>{"A=1", "B=x=y"}));
}

}  // namespace
}  // namespace cohort::agent
