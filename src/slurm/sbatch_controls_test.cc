#include "slurm/sbatch_controls.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <csignal>

namespace cohort::slurm {
namespace {

using std::chrono::seconds;
using ::testing::ElementsAre;
using ::testing::HasSubstr;

template <typename T>
std::string ErrorOf(const StatusOr<T>& result) {
  return result.ok() ? "ok" : result.status().message();
}

TEST(ParseSignalSpec, ReadsNamesNumbersFlagsAndTheTime) {
  EXPECT_EQ(*ParseSignalSpec("USR1"), (SignalSpec{SIGUSR1, "USR1", seconds(60), false, false}));
  EXPECT_EQ(*ParseSignalSpec("B:SIGUSR1@90"),
            (SignalSpec{SIGUSR1, "USR1", seconds(90), true, false}));
  EXPECT_EQ(*ParseSignalSpec("sigterm@0"), (SignalSpec{SIGTERM, "TERM", seconds(0)}));
  EXPECT_EQ(*ParseSignalSpec("10@300"), (SignalSpec{10, "USR1", seconds(300)}));
  EXPECT_EQ(*ParseSignalSpec("35"), (SignalSpec{35, "35", seconds(60)}));
  EXPECT_EQ(*ParseSignalSpec("RB:INT"), (SignalSpec{SIGINT, "INT", seconds(60), true, true}));
  EXPECT_EQ(*ParseSignalSpec("R:2"), (SignalSpec{SIGINT, "INT", seconds(60), false, true}));
}

TEST(ParseSignalSpec, SaysWhatIsWrong) {
  EXPECT_THAT(ErrorOf(ParseSignalSpec("FOO")), HasSubstr("\"FOO\" is not a signal"));
  EXPECT_THAT(ErrorOf(ParseSignalSpec("0")), HasSubstr("\"0\" is not a signal"));
  EXPECT_THAT(ErrorOf(ParseSignalSpec("65")), HasSubstr("from 1 to 64"));
  EXPECT_THAT(ErrorOf(ParseSignalSpec("B:")), HasSubstr("\"\" is not a signal"));
  EXPECT_THAT(ErrorOf(ParseSignalSpec("USR1@")), HasSubstr("seconds from 0 to 65535"));
  EXPECT_THAT(ErrorOf(ParseSignalSpec("USR1@70000")), HasSubstr("seconds from 0 to 65535"));
  EXPECT_THAT(ErrorOf(ParseSignalSpec("USR1@1m")), HasSubstr("seconds from 0 to 65535"));
}

TEST(ParseDependencyList, MapsSlurmsTypesToConditions) {
  using C = DependencyCondition;
  EXPECT_THAT(*ParseDependencyList("afterok:20:21,afterany:23"),
              ElementsAre(Dependency{20, C::kSuccess}, Dependency{21, C::kSuccess},
                          Dependency{23, C::kEnd}));
  EXPECT_THAT(*ParseDependencyList("AfterNotOK:7"), ElementsAre(Dependency{7, C::kFailure}));
  EXPECT_THAT(*ParseDependencyList("42"), ElementsAre(Dependency{42, C::kEnd}));
}

TEST(ParseDependencyList, NamesAJobOnceWithTheStricterCondition) {
  using C = DependencyCondition;
  EXPECT_THAT(*ParseDependencyList("afterany:5,afterok:5:6,afterok:6,afterany:6"),
              ElementsAre(Dependency{5, C::kSuccess}, Dependency{6, C::kSuccess}));
  EXPECT_THAT(*ParseDependencyList("afternotok:5,5"), ElementsAre(Dependency{5, C::kFailure}));
  EXPECT_THAT(ErrorOf(ParseDependencyList("afterok:5,afternotok:5")),
              HasSubstr("job 5 must both succeed (afterok) and fail (afternotok), which it never "
                        "can"));
}

TEST(ParseDependencyList, RefusesWhatCohortCannotWaitForSayingWhy) {
  EXPECT_THAT(ErrorOf(ParseDependencyList("afterok:1?afterany:2")),
              HasSubstr("'?' (start when any one is met) is not supported"));
  EXPECT_THAT(ErrorOf(ParseDependencyList("singleton")), HasSubstr("singleton"));
  EXPECT_THAT(ErrorOf(ParseDependencyList("after:5")), HasSubstr("after (once a job has started)"));
  EXPECT_THAT(ErrorOf(ParseDependencyList("aftercorr:5")), HasSubstr("aftercorr"));
  EXPECT_THAT(ErrorOf(ParseDependencyList("expand:5")), HasSubstr("expand is not supported"));
  EXPECT_THAT(ErrorOf(ParseDependencyList("afterok:5+10")), HasSubstr("(+minutes)"));
  EXPECT_THAT(ErrorOf(ParseDependencyList("afterok:5_3")), HasSubstr("one element of an array"));
  EXPECT_THAT(ErrorOf(ParseDependencyList("afterok:x")), HasSubstr("\"x\" is not a job id"));
  EXPECT_THAT(ErrorOf(ParseDependencyList("afterok:0")), HasSubstr("\"0\" is not a job id"));
  EXPECT_THAT(ErrorOf(ParseDependencyList("afterok")), HasSubstr("\"\" is not a job id"));
  EXPECT_THAT(ErrorOf(ParseDependencyList("whenever:5")),
              HasSubstr("\"whenever:5\" is not a dependency; use afterok:ID"));
  EXPECT_THAT(ErrorOf(ParseDependencyList("")), HasSubstr("is not a dependency"));
  std::string many = "afterok";
  for (int i = 1; i <= 65; ++i) many += ":" + std::to_string(i);
  EXPECT_THAT(ErrorOf(ParseDependencyList(many)), HasSubstr("at most 64 jobs"));
}

TEST(ParseExportSpec, ReadsTheBaseAndTheVariables) {
  using B = ExportSpec::Base;
  EXPECT_EQ(*ParseExportSpec("ALL"), (ExportSpec{B::kAll, {}}));
  EXPECT_EQ(*ParseExportSpec("none"), (ExportSpec{B::kNone, {}}));
  EXPECT_EQ(*ParseExportSpec("NIL"), (ExportSpec{B::kNil, {}}));
  EXPECT_EQ(*ParseExportSpec("EDITOR,ARG1=test"),
            (ExportSpec{B::kNone, {{"EDITOR", std::nullopt}, {"ARG1", "test"}}}));
  EXPECT_EQ(*ParseExportSpec("ALL,EDITOR=/bin/emacs"),
            (ExportSpec{B::kAll, {{"EDITOR", "/bin/emacs"}}}));
  EXPECT_EQ(*ParseExportSpec("A=,B=x=y"), (ExportSpec{B::kNone, {{"A", ""}, {"B", "x=y"}}}));
  EXPECT_EQ(*ParseExportSpec("'A=x,y',B"),
            (ExportSpec{B::kNone, {{"A", "x,y"}, {"B", std::nullopt}}}));
  EXPECT_EQ(*ParseExportSpec("A=\"x,y\""), (ExportSpec{B::kNone, {{"A", "\"x,y\""}}}));
}

TEST(ParseExportSpec, SaysWhatIsWrong) {
  EXPECT_THAT(ErrorOf(ParseExportSpec("NONE,A=1")), HasSubstr("NONE takes no variables"));
  EXPECT_THAT(ErrorOf(ParseExportSpec("A,nil")), HasSubstr("nil takes no variables"));
  EXPECT_THAT(ErrorOf(ParseExportSpec("1A=2")), HasSubstr("\"1A=2\" is not NAME or NAME=value"));
  EXPECT_THAT(ErrorOf(ParseExportSpec("A,,B")), HasSubstr("\"\" is not NAME"));
  EXPECT_THAT(ErrorOf(ParseExportSpec("")), HasSubstr("is not NAME"));
  EXPECT_THAT(ErrorOf(ParseExportSpec("A='x")), HasSubstr("a quote is never closed"));
}

TEST(ParseOpenModeAndYesNo, ReadAsSlurmDoes) {
  EXPECT_EQ(*ParseOpenMode("append"), OpenMode::kAppend);
  EXPECT_EQ(*ParseOpenMode("T"), OpenMode::kTruncate);
  EXPECT_THAT(ErrorOf(ParseOpenMode("overwrite")), HasSubstr("give append or truncate"));
  EXPECT_TRUE(*ParseYesNo("YES"));
  EXPECT_FALSE(*ParseYesNo("no"));
  EXPECT_THAT(ErrorOf(ParseYesNo("y")), HasSubstr("give yes or no"));
}

}  // namespace
}  // namespace cohort::slurm
