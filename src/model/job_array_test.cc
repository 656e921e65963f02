// Array indices in Slurm's forms, and arrays and dependencies in a job spec.
#include "model/job_array.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "model/job_spec_parser.h"

namespace cohort {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

TEST(ArrayIndices, ReadSlurmsFormsAndWriteTheShortestBack) {
  EXPECT_THAT(*ParseArrayIndices("7", "a"), ElementsAre(7));
  EXPECT_THAT(*ParseArrayIndices("0-3", "a"), ElementsAre(0, 1, 2, 3));
  EXPECT_THAT(*ParseArrayIndices("0-9:4,20,3", "a"), ElementsAre(0, 3, 4, 8, 20));
  int max_parallel = 0;
  EXPECT_EQ(ParseArrayIndices("0-99%10", "--array", &max_parallel)->size(), 100u);
  EXPECT_EQ(max_parallel, 10);
  EXPECT_EQ(FormatArrayIndices(*ParseArrayIndices("0-99:2,200", "a")), "0-98:2,200");
  EXPECT_EQ(FormatArrayIndices({1, 2, 5, 6, 7}), "1,2,5-7");
  for (const char* text : {"0-98:2,200", "1,2,5-7", "3", "0-999"}) {
    EXPECT_EQ(FormatArrayIndices(*ParseArrayIndices(text, "a")), text);
  }
}

TEST(ArrayIndices, SayWhatIsWrong) {
  auto error = [](std::string_view text) {
    auto parsed = ParseArrayIndices(text, "array.indices");
    return parsed.ok() ? std::string("ok") : parsed.status().message();
  };
  EXPECT_THAT(error("a-b"), HasSubstr("array.indices: \"a-b\" is not an index or a range"));
  EXPECT_THAT(error("9-3"), HasSubstr("the range ends before it starts"));
  EXPECT_THAT(error("0-5000"), HasSubstr("makes more than 1000 jobs"));
  EXPECT_THAT(error("1000000"), HasSubstr("indices go up to 999999"));
  EXPECT_THAT(error("0-9:0"), HasSubstr("the step after ':' must be 1 or more"));
  EXPECT_THAT(error("0-9%2"), HasSubstr("here max_parallel says it"));
  EXPECT_THAT(error(""), HasSubstr("is not an index or a range"));
}

TEST(JobSpecArrays, AnArrayAndDependenciesReadBackAndBadOnesAreNamed) {
  auto spec = ParseJobSpecJson(Json::parse(R"({"name": "a", "tasks": [{"role": "w",
      "command": ["true"]}], "array": {"indices": "0-9:2", "max_parallel": 2},
      "depends_on": [{"job": 4, "on": "failure"}, 5]})"));
  ASSERT_TRUE(spec.ok()) << spec.status().ToString();
  ASSERT_TRUE(spec->array.has_value());
  EXPECT_THAT(spec->array->indices, ElementsAre(0, 2, 4, 6, 8));
  EXPECT_EQ(spec->array->max_parallel, 2);
  ASSERT_EQ(spec->depends_on.size(), 2u);
  EXPECT_EQ(spec->depends_on[0], (Dependency{4, DependencyCondition::kFailure}));
  EXPECT_EQ(spec->depends_on[1], (Dependency{5, DependencyCondition::kSuccess}));
  // The canonical form reads back as the same spec.
  auto again = ParseJobSpecJson(ToJson(*spec));
  ASSERT_TRUE(again.ok()) << again.status().ToString();
  EXPECT_EQ(again->array, spec->array);
  EXPECT_EQ(again->depends_on, spec->depends_on);

  auto bad = ParseJobSpecJson(Json::parse(R"({"name": "a", "tasks": [{"role": "w",
      "command": ["true"]}], "array": {"indices": "x", "max": 2},
      "depends_on": [{"job": 4, "on": "sometimes"}, {"job": 0}, 7, 7]})"));
  ASSERT_FALSE(bad.ok());
  std::string all;
  for (const auto& d : bad.status().details()) all += d + "\n";
  EXPECT_THAT(all, HasSubstr("array.max: unknown field; expected indices and max_parallel"));
  EXPECT_THAT(all, HasSubstr("array.indices: \"x\" is not an index or a range"));
  EXPECT_THAT(all, HasSubstr("depends_on[0].on: must be success, failure or end"));
  EXPECT_THAT(all, HasSubstr("depends_on[1].job:"));
  EXPECT_THAT(all, HasSubstr("depends_on[3]: names job 7 again"));
}

}  // namespace
}  // namespace cohort
