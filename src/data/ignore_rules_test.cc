#include "data/ignore_rules.h"

#include <gtest/gtest.h>

namespace cohort::data {
namespace {

IgnoreRules Rules(std::string_view text) {
  auto rules = IgnoreRules::Parse(text);
  EXPECT_TRUE(rules.ok()) << rules.status().ToString();
  return rules.ok() ? *rules : *IgnoreRules::Parse("");
}

TEST(IgnoreRulesTest, NamesMatchAtAnyDepthAndSlashesAnchor) {
  IgnoreRules rules = Rules("# build products\n*.pyc\n__pycache__/\n/data\nbuild/out\n\n");
  EXPECT_TRUE(rules.Ignored("a.pyc", false));
  EXPECT_TRUE(rules.Ignored("pkg/sub/a.pyc", false));
  EXPECT_FALSE(rules.Ignored("a.py", false));
  EXPECT_TRUE(rules.Ignored("pkg/__pycache__", true));
  EXPECT_FALSE(rules.Ignored("pkg/__pycache__", false)) << "a trailing / means directories only";
  EXPECT_TRUE(rules.Ignored("data", true));
  EXPECT_FALSE(rules.Ignored("src/data", true)) << "a leading / anchors at the top";
  EXPECT_TRUE(rules.Ignored("build/out", true));
  EXPECT_FALSE(rules.Ignored("x/build/out", true));
  EXPECT_FALSE(rules.Ignored("# build products", false)) << "a comment is no pattern";
}

TEST(IgnoreRulesTest, TheLastMatchWinsAndBangReincludes) {
  IgnoreRules rules = Rules("*.log\n!keep.log\nlogs/**\n");
  EXPECT_TRUE(rules.Ignored("run.log", false));
  EXPECT_FALSE(rules.Ignored("keep.log", false));
  EXPECT_FALSE(rules.Ignored("sub/keep.log", false));
  EXPECT_TRUE(rules.Ignored("logs/keep.log", false)) << "a later pattern wins";
}

TEST(IgnoreRulesTest, DoubleStarsCrossDirectoriesAndSingleOnesDoNot) {
  IgnoreRules rules = Rules("a/**/z.txt\ndocs/*.md\n**/tmp\n");
  EXPECT_TRUE(rules.Ignored("a/z.txt", false));
  EXPECT_TRUE(rules.Ignored("a/b/c/z.txt", false));
  EXPECT_FALSE(rules.Ignored("b/a/z.txt", false));
  EXPECT_TRUE(rules.Ignored("docs/x.md", false));
  EXPECT_FALSE(rules.Ignored("docs/sub/x.md", false)) << "'*' does not cross '/'";
  EXPECT_TRUE(rules.Ignored("tmp", true));
  EXPECT_TRUE(rules.Ignored("deep/er/tmp", true));
}

TEST(IgnoreRulesTest, EscapesAndBounds) {
  IgnoreRules rules = Rules("\\#notes\n\\!bang\n");
  EXPECT_TRUE(rules.Ignored("#notes", false));
  EXPECT_TRUE(rules.Ignored("!bang", false));
  auto too_long = IgnoreRules::Parse("ok\n" + std::string(kMaxIgnorePatternBytes + 1, 'x'));
  ASSERT_FALSE(too_long.ok());
  EXPECT_NE(too_long.status().message().find("line 2"), std::string::npos);
  EXPECT_FALSE(IgnoreRules::Parse("**/**/**/**/**/x").ok());
}

}  // namespace
}  // namespace cohort::data
