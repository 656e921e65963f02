#include "sim/concat.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

namespace cohort::sim {
namespace {

Source Itp(const std::string& name, const std::string& rows) {
  auto t = ParseTrace("job_id,submission_time,duration,num_gpu\n" + rows, TraceFormat::kItp);
  EXPECT_TRUE(t.ok());
  return Source{name, *t};
}

TEST(Concat, EachSourceATeamIdsPrefixedInSubmissionOrder) {
  EXPECT_EQ(SourceName("../shared/traces/itp-2021/cluster04.csv"), "cluster04");
  EXPECT_EQ(SourceName("tiresias-60.csv"), "tiresias-60");
  auto jobs =
      Concatenate({Itp("c1", "1,10,100,1\n2,30,100,8"), Itp("c2", "1,20,50,2\n2,10,5,1")}, false);
  ASSERT_TRUE(jobs.ok()) << jobs.status().ToString();
  ASSERT_EQ(jobs->size(), 4u);
  // Submission order; the tie at 10 in the order of the sources.
  EXPECT_EQ((*jobs)[0].id, "c1-1");
  EXPECT_EQ((*jobs)[1].id, "c2-2");
  EXPECT_EQ((*jobs)[2].id, "c2-1");
  EXPECT_EQ((*jobs)[3].id, "c1-2");
  EXPECT_EQ((*jobs)[1].team, "c2");
  EXPECT_EQ((*jobs)[3].team, "c1");
  EXPECT_EQ((*jobs)[3].gpus, 8);
  // Written and read back as a Cohort trace, the teams stay.
  auto back = ParseTrace(WriteCohortTrace(*jobs), std::nullopt);
  ASSERT_TRUE(back.ok());
  EXPECT_EQ(back->jobs[2].team, "c2");
  EXPECT_EQ(back->jobs[2].duration, 50);
}

TEST(Concat, KeepsTeamsWhenAskedAndRefusesTwoSourcesOfOneName) {
  auto kept = Concatenate({Itp("c1", "1,10,100,1")}, true);
  ASSERT_TRUE(kept.ok());
  EXPECT_EQ((*kept)[0].team, "") << "ITP jobs name no team";
  EXPECT_EQ((*kept)[0].id, "c1-1") << "ids are prefixed all the same";
  auto twice = Concatenate({Itp("c1", "1,10,100,1"), Itp("c1", "2,10,100,1")}, false);
  ASSERT_FALSE(twice.ok());
  EXPECT_THAT(twice.status().message(), ::testing::HasSubstr("two files are named c1"));
}

}  // namespace
}  // namespace cohort::sim
