#include "slurm/sbatch_resources.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

namespace cohort::slurm {
namespace {

using std::chrono::hours;
using std::chrono::minutes;
using ::testing::HasSubstr;

template <typename T>
std::string ErrorOf(const StatusOr<T>& result) {
  return result.ok() ? "ok" : result.status().message();
}

TEST(ParseNodeRange, TakesACountOrARange) {
  EXPECT_EQ(*ParseNodeRange("4"), (NodeRange{4, 4}));
  EXPECT_EQ(*ParseNodeRange("2-4"), (NodeRange{2, 4}));
  EXPECT_THAT(ErrorOf(ParseNodeRange("4-2")), HasSubstr("ends before it starts"));
  EXPECT_THAT(ErrorOf(ParseNodeRange("0")), HasSubstr("\"0\" is not a node count"));
  EXPECT_THAT(ErrorOf(ParseNodeRange("2k")), HasSubstr("is not a node count"));
  EXPECT_THAT(ErrorOf(ParseNodeRange("1,5,9")), HasSubstr("lists of allowed node counts"));
  EXPECT_THAT(ErrorOf(ParseNodeRange("1-15:4")), HasSubstr("lists of allowed node counts"));
  EXPECT_THAT(ErrorOf(ParseNodeRange("")), HasSubstr("is not a node count"));
}

TEST(ParsePositiveCount, IsBetweenOneAndTheBound) {
  EXPECT_EQ(*ParsePositiveCount("8", 100), 8);
  EXPECT_THAT(ErrorOf(ParsePositiveCount("0", 100)), HasSubstr("from 1 to 100"));
  EXPECT_THAT(ErrorOf(ParsePositiveCount("101", 100)), HasSubstr("from 1 to 100"));
  EXPECT_THAT(ErrorOf(ParsePositiveCount("4x", 100)), HasSubstr("\"4x\" is not a whole number"));
}

TEST(ParseGpuRequest, TakesACountWithAnOptionalType) {
  EXPECT_EQ(*ParseGpuRequest("2"), (GpuRequest{"", 2}));
  EXPECT_EQ(*ParseGpuRequest("a100:8"), (GpuRequest{"a100", 8}));
  EXPECT_EQ(ParseGpuRequest("nvidia_a100-80gb:1")->ToString(), "nvidia_a100-80gb:1");
  EXPECT_EQ(ParseGpuRequest("4")->ToString(), "4");
  EXPECT_THAT(ErrorOf(ParseGpuRequest("a100:2,v100:1")), HasSubstr("GPUs of one type"));
  EXPECT_THAT(ErrorOf(ParseGpuRequest("a100")), HasSubstr("the GPU count \"a100\""));
  EXPECT_THAT(ErrorOf(ParseGpuRequest(":2")), HasSubstr("\"\" is not a GPU type"));
  EXPECT_THAT(ErrorOf(ParseGpuRequest("a 100:2")), HasSubstr("\"a 100\" is not a GPU type"));
}

TEST(ParseGres, TakesGpusInSlurmsFormsAndNamesAnythingElse) {
  EXPECT_EQ(**ParseGres("gpu"), (GpuRequest{"", 1}));
  EXPECT_EQ(**ParseGres("gpu:4"), (GpuRequest{"", 4}));
  EXPECT_EQ(**ParseGres("gpu:a100"), (GpuRequest{"a100", 1}));
  EXPECT_EQ(**ParseGres("gpu:a100:2"), (GpuRequest{"a100", 2}));
  EXPECT_EQ(**ParseGres("gres/gpu:h100:8"), (GpuRequest{"h100", 8}));
  EXPECT_FALSE(ParseGres("none")->has_value());
  EXPECT_FALSE(ParseGres("NONE")->has_value());
  EXPECT_THAT(ErrorOf(ParseGres("mps:100")),
              HasSubstr("\"mps:100\": Cohort allocates GPUs only; give gpu[:type][:count]"));
  EXPECT_THAT(ErrorOf(ParseGres("gpu:2,nvme:1")), HasSubstr("\"nvme:1\": Cohort allocates GPUs"));
  EXPECT_THAT(ErrorOf(ParseGres("gpu:a100:1,gpu:v100:1")), HasSubstr("GPUs of one type"));
  EXPECT_THAT(ErrorOf(ParseGres("gpu:a100:1:x")), HasSubstr("is not gpu[:type][:count]"));
  EXPECT_THAT(ErrorOf(ParseGres("gpu:2k")), HasSubstr("the GPU count \"2k\""));
}

TEST(ParseMemorySize, UsesSlurmsUnitsMebibytesByDefault) {
  constexpr int64_t kMi = int64_t{1} << 20;
  EXPECT_EQ(*ParseMemorySize("500"), 500 * kMi);
  EXPECT_EQ(*ParseMemorySize("500M"), 500 * kMi);
  EXPECT_EQ(*ParseMemorySize("32G"), 32 * 1024 * kMi);
  EXPECT_EQ(*ParseMemorySize("32gb"), 32 * 1024 * kMi);
  EXPECT_EQ(*ParseMemorySize("2T"), 2 * 1024 * 1024 * kMi);
  EXPECT_EQ(*ParseMemorySize("2048K"), 2 * kMi);
  EXPECT_EQ(*ParseMemorySize("1500k"), 2 * kMi);  // rounded up to whole MiB, as Slurm
  EXPECT_EQ(*ParseMemorySize("0"), 0);
  for (const char* bad : {"", "G", "1.5G", "-1", "4GiB", "4X", "4 G", "12345678901234567"}) {
    EXPECT_THAT(ErrorOf(ParseMemorySize(bad)), HasSubstr("is not a memory size")) << bad;
  }
  EXPECT_THAT(ErrorOf(ParseMemorySize("999999999T")), HasSubstr("more memory than any node"));
}

TEST(ParseTimeLimit, ReadsEverySlurmForm) {
  auto limit = [](std::string_view text) { return ParseTimeLimit(text)->duration; };
  EXPECT_EQ(limit("90"), minutes(90));
  EXPECT_EQ(limit("90:30"), minutes(91));  // seconds round up to the minute
  EXPECT_EQ(limit("0:30"), minutes(1));
  EXPECT_EQ(limit("2:00:00"), hours(2));
  EXPECT_EQ(limit("1:30:01"), minutes(91));
  EXPECT_EQ(limit("1-12"), hours(36));
  EXPECT_EQ(limit("1-0:30"), hours(24) + minutes(30));
  EXPECT_EQ(limit("2-01:00:30"), hours(49) + minutes(1));
  for (const char* unlimited : {"UNLIMITED", "infinite", "-1", "0", "0:0", "0-0"}) {
    EXPECT_TRUE(ParseTimeLimit(unlimited)->unlimited) << unlimited;
  }
  EXPECT_FALSE(ParseTimeLimit("1")->unlimited);
}

TEST(ParseTimeLimit, RefusesWhatIsNotOne) {
  for (const char* bad : {"", "1h", "1:2:3:4", "1-2-3", "-5", "1-", "1-2:3:4:5", ":30", "1::2",
                          "1.5", "9999999999"}) {
    EXPECT_THAT(ErrorOf(ParseTimeLimit(bad)), HasSubstr("is not a time limit; use minutes")) << bad;
  }
}

}  // namespace
}  // namespace cohort::slurm
