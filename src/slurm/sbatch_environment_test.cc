#include "slurm/sbatch_environment.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

namespace cohort::slurm {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::IsEmpty;

SbatchParse Environment(const std::map<std::string, std::string>& env) {
  auto parse = ParseSbatchEnvironment(env);
  EXPECT_TRUE(parse.ok()) << parse.status().ToString();
  return parse.ok() ? *parse : SbatchParse{};
}

TEST(SbatchEnvironment, EachVariableIsItsOption) {
  const SbatchParse parse = Environment({{"SBATCH_PARTITION", "research"},
                                         {"SBATCH_TIMELIMIT", "10"},
                                         {"SBATCH_MEM_PER_NODE", "2G"},
                                         {"SBATCH_REQUEUE", "1"},
                                         {"SBATCH_WAIT", ""},
                                         {"SBATCH_EXCLUSIVE", "user"},
                                         {"SLURM_PARTITION", "not sbatch's"},
                                         {"PATH", "/usr/bin"}});
  EXPECT_EQ(parse.options.partition, "research");
  ASSERT_TRUE(parse.options.time.has_value());
  EXPECT_EQ(parse.options.time->duration, std::chrono::minutes(10));
  EXPECT_EQ(parse.options.mem, int64_t{2} << 30);
  EXPECT_EQ(parse.options.requeue, true);
  EXPECT_TRUE(parse.options.wait);
  EXPECT_EQ(parse.options.exclusive, "user");
  EXPECT_THAT(parse.unknown, IsEmpty());
  EXPECT_THAT(parse.operands, IsEmpty());
  EXPECT_EQ(Environment({{"SBATCH_EXCLUSIVE", ""}}).options.exclusive, "");
  EXPECT_EQ(SbatchVariableOption("SBATCH_TIMELIMIT"), "time");
  EXPECT_EQ(SbatchVariableOption("SBATCH_NOPE"), "");
}

TEST(SbatchEnvironment, OverridesTheScriptAndTheCommandLineOverridesIt) {
  auto script = ParseSbatchArguments(
      {{"--partition=from-script", Origin::ScriptLine(2)}, {"--time=5", Origin::ScriptLine(3)}});
  ASSERT_TRUE(script.ok());
  const SbatchParse env = Environment({{"SBATCH_PARTITION", "from-env"}, {"SBATCH_QOS", "high"}});
  auto command_line = ParseSbatchArguments({"-q", "low", "train.sh"}, Origin::CommandLine());
  ASSERT_TRUE(command_line.ok());
  const SbatchParse merged = MergeSbatchOptions(MergeSbatchOptions(*script, env), *command_line);
  EXPECT_EQ(merged.options.partition, "from-env");
  EXPECT_EQ(merged.options.qos, "low");
  EXPECT_EQ(merged.options.time->duration, std::chrono::minutes(5));
  EXPECT_THAT(merged.operands, ElementsAre("train.sh"));
}

TEST(SbatchEnvironment, ProblemsNameTheirVariable) {
  auto bad = ParseSbatchEnvironment({{"SBATCH_TIMELIMIT", "soon"}});
  ASSERT_FALSE(bad.ok());
  EXPECT_THAT(bad.status().message(), HasSubstr("$SBATCH_TIMELIMIT"));
  const SbatchParse unsupported = Environment({{"SBATCH_CLUSTERS", "other"}});
  ASSERT_EQ(unsupported.unknown.size(), 1u);
  EXPECT_EQ(unsupported.unknown[0].origin.ToString(), "$SBATCH_CLUSTERS");
  auto check = CheckUnknown(unsupported, false);
  ASSERT_FALSE(check.ok());
  EXPECT_THAT(check.status().message(), HasSubstr("$SBATCH_CLUSTERS: --clusters=other"));
  // Ignored ones warn, naming the variable.
  EXPECT_THAT(Environment({{"SBATCH_HINT", "nomultithread"}}).warnings,
              ElementsAre(HasSubstr("$SBATCH_HINT")));
}

}  // namespace
}  // namespace cohort::slurm
