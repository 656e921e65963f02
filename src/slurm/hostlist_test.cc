#include "slurm/hostlist.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <fmt/format.h>

namespace cohort::slurm {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

std::vector<std::string> Expanded(std::string_view text) {
  auto names = ExpandHostlist(text);
  EXPECT_TRUE(names.ok()) << text << ": " << names.status().ToString();
  return names.ok() ? *names : std::vector<std::string>{};
}

std::string ErrorOf(std::string_view text) {
  auto names = ExpandHostlist(text);
  return names.ok() ? "ok" : names.status().message();
}

TEST(ExpandHostlist, KeepsEachRangesZeroPadding) {
  EXPECT_THAT(Expanded("gpu[01-03,7],login1"),
              ElementsAre("gpu01", "gpu02", "gpu03", "gpu7", "login1"));
  EXPECT_THAT(Expanded("n[8-10]"), ElementsAre("n8", "n9", "n10"));
  EXPECT_THAT(Expanded("n[08-10]"), ElementsAre("n08", "n09", "n10"));
  EXPECT_THAT(Expanded("n[098-100]"), ElementsAre("n098", "n099", "n100"));
}

TEST(ExpandHostlist, MultipliesOutSeveralBracketGroupsFirstOutermost) {
  EXPECT_THAT(Expanded("rack[1-2]-n[1-2]"),
              ElementsAre("rack1-n1", "rack1-n2", "rack2-n1", "rack2-n2"));
  EXPECT_THAT(Expanded("[3,1]x"), ElementsAre("3x", "1x"));
}

TEST(ExpandHostlist, KeepsOrderAndDuplicatesAndTakesAnySeparator) {
  EXPECT_THAT(Expanded("b2,a1 b2\ta[1-2]\n,,c"), ElementsAre("b2", "a1", "b2", "a1", "a2", "c"));
  EXPECT_THAT(Expanded(""), ElementsAre());
  EXPECT_THAT(Expanded("login"), ElementsAre("login"));
}

TEST(ExpandHostlist, SaysWhatIsWrong) {
  EXPECT_THAT(ErrorOf("gpu[1-3"), HasSubstr("'[' is never closed"));
  EXPECT_THAT(ErrorOf("gpu1-3]"), HasSubstr("']' without a '['"));
  EXPECT_THAT(ErrorOf("gpu[]"), HasSubstr("\"\" is not a number or a range"));
  EXPECT_THAT(ErrorOf("gpu[a-b]"), HasSubstr("\"a-b\" is not a number or a range"));
  EXPECT_THAT(ErrorOf("gpu[1--3]"), HasSubstr("\"1--3\" is not a number"));
  EXPECT_THAT(ErrorOf("gpu[5-3]"), HasSubstr("hostlist \"gpu[5-3]\": the range \"5-3\" ends"));
  EXPECT_THAT(ErrorOf("gpu[1-2,]"), HasSubstr("\"\" is not a number"));
  EXPECT_THAT(ErrorOf(std::string(300, 'a')), HasSubstr("longer than 255 bytes"));
}

TEST(ExpandHostlist, RefusesMoreThanTheBoundOfNames) {
  EXPECT_EQ(Expanded("n[1-65536]").size(), kMaxHostlistNames);
  EXPECT_EQ(Expanded("a[1-256]b[1-256]").size(), kMaxHostlistNames);
  EXPECT_THAT(ErrorOf("n[1-65537]"), HasSubstr("names more than 65536 hosts"));
  EXPECT_THAT(ErrorOf("n[0-999999999999]"), HasSubstr("names more than 65536 hosts"));
  // Over the bound only once the groups multiply, or across tokens.
  EXPECT_THAT(ErrorOf("a[1-257]b[1-256]"), HasSubstr("names more than"));
  EXPECT_THAT(ErrorOf("n[1-65536],extra"), HasSubstr("names more than"));
}

TEST(CompressHostlist, IsSlurmsCompactFormInInputOrder) {
  EXPECT_EQ(CompressHostlist({"gpu01", "gpu02", "gpu03", "login1"}), "gpu[01-03],login1");
  EXPECT_EQ(CompressHostlist({"gpu01", "gpu02", "gpu03", "gpu7", "login1"}), "gpu[01-03,7],login1");
  // scontrol(1): "tux2,tux1,tux2 = tux[2,1-2]" (not sorted, duplicates kept).
  EXPECT_EQ(CompressHostlist({"tux2", "tux1", "tux2"}), "tux[2,1-2]");
  EXPECT_EQ(CompressHostlist({"n1", "login", "n2"}), "n1,login,n2");
  EXPECT_EQ(CompressHostlist({"gpu7"}), "gpu7");
  EXPECT_EQ(CompressHostlist({"login", "login"}), "login,login");
  EXPECT_EQ(CompressHostlist({}), "");
}

TEST(CompressHostlist, JoinsWidthsOnlyWhenNoPaddingChanges) {
  EXPECT_EQ(CompressHostlist({"n9", "n10", "n11"}), "n[9-11]");
  EXPECT_EQ(CompressHostlist({"n99", "n100"}), "n[99-100]");
  EXPECT_EQ(CompressHostlist({"n09", "n10"}), "n[09-10]");
  EXPECT_EQ(CompressHostlist({"n9", "n010"}), "n[9,010]");
  EXPECT_EQ(CompressHostlist({"n01", "n2"}), "n[01,2]");
}

TEST(Hostlist, RoundTrips) {
  const std::vector<std::vector<std::string>> lists = {
      {"gpu01", "gpu02", "gpu03", "gpu7", "login1"},
      {"tux2", "tux1", "tux2"},
      {"n9", "n10", "n010", "n011", "n099", "n100", "x"},
      {"rack1-n1", "rack1-n2", "rack2-n1", "rack2-n2"},
      {"a", "b1", "c"},
      {"007", "008"},
  };
  for (const auto& names : lists) {
    const std::string compact = CompressHostlist(names);
    EXPECT_EQ(Expanded(compact), names) << compact;
  }
  for (const char* compact : {"gpu[01-03,7],login1", "n[9-11,13]", "a[098-101]"}) {
    EXPECT_EQ(CompressHostlist(Expanded(compact)), compact);
  }
  std::vector<std::string> many;
  for (int i = 0; i < 1000; ++i) many.push_back(fmt::format("node{:04}", i * 2 % 1000));
  EXPECT_EQ(Expanded(CompressHostlist(many)), many);
}

}  // namespace
}  // namespace cohort::slurm
