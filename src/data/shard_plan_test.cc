// Which file goes into which shard: samples whole, in key order, cut at the target.
#include "data/shard_plan.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <random>

namespace cohort::data {
namespace {

std::vector<std::string> Paths(const ShardPlanEntry& shard) {
  std::vector<std::string> out;
  for (const InputFile& f : shard.files) out.push_back(f.path);
  return out;
}

TEST(SplitSampleName, TheKeyEndsAtTheFirstDotOfTheLastSegment) {
  auto a = SplitSampleName("train/0001.jpg");
  ASSERT_TRUE(a.ok());
  EXPECT_EQ(a->key, "train/0001");
  EXPECT_EQ(a->field, "jpg");
  auto b = SplitSampleName("train/0001.seg.png");
  ASSERT_TRUE(b.ok());
  EXPECT_EQ(b->key, "train/0001");
  EXPECT_EQ(b->field, "seg.png");
  auto c = SplitSampleName("v1.2/x.cls");  // a dot in a directory is part of the key
  ASSERT_TRUE(c.ok());
  EXPECT_EQ(c->key, "v1.2/x");
  EXPECT_EQ(c->field, "cls");
}

TEST(SplitSampleName, ANameWithoutAFieldOrNotAMemberNameIsRefusedNamingIt) {
  for (std::string path : {"LICENSE", "train/.hidden", "train/x.", "a//b.jpg", "../a.jpg",
                           "/abs/a.jpg", "./a.jpg", "a/./b.jpg", "tab\t.jpg"}) {
    auto s = SplitSampleName(path);
    ASSERT_FALSE(s.ok()) << path;
    EXPECT_EQ(s.status().code(), StatusCode::kInvalidArgument);
    EXPECT_NE(s.status().message().find(path.substr(0, 3)), std::string::npos)
        << s.status().message();
  }
  auto latin1 = SplitSampleName("caf\xe9.jpg");
  ASSERT_FALSE(latin1.ok());
  EXPECT_EQ(latin1.status().message(),
            "caf\xef\xbf\xbd.jpg: cannot be a member's name: the key is not UTF-8");
  for (std::string surrogate : {"a\xed\xa0\x80.jpg", "overlong\xe0\x80\xaf.jpg"}) {
    auto s = SplitSampleName(surrogate);
    ASSERT_FALSE(s.ok());
    EXPECT_NE(s.status().message().find("is not UTF-8"), std::string::npos);
  }
  auto utf8 = SplitSampleName("caf\xc3\xa9.jpg");
  EXPECT_TRUE(utf8.ok());
  auto too_long = SplitSampleName(std::string(1021, 'a') + ".jpg");
  ASSERT_FALSE(too_long.ok());
  EXPECT_NE(too_long.status().message().find("longer than 1024 bytes"), std::string::npos);
  EXPECT_TRUE(SplitSampleName(std::string(1020, 'a') + ".jpg").ok());
}

TEST(TarMemberBytes, AHeaderAndWholeBlocksAndAPaxHeaderForALongName) {
  EXPECT_EQ(TarMemberBytes("a.jpg", 0), 512);
  EXPECT_EQ(TarMemberBytes("a.jpg", 1), 1024);
  EXPECT_EQ(TarMemberBytes("a.jpg", 512), 1024);
  EXPECT_EQ(TarMemberBytes("a.jpg", 513), 1536);
  EXPECT_GT(TarMemberBytes(std::string(200, 'a') + ".jpg", 1), 1024);
}

TEST(PlanShards, SamplesAreKeptWholeInKeyOrderWhateverTheInputOrder) {
  std::vector<InputFile> files = {{"b.jpg", 10}, {"a.cls", 1}, {"x.d/y.jpg", 3}, {"a.jpg", 10},
                                  {"x.z", 3},    {"b.cls", 1}, {"x.a", 3},       {"a-b.jpg", 2}};
  std::mt19937 rng(7);
  std::shuffle(files.begin(), files.end(), rng);
  auto plan = PlanShards(files, 1 << 20);
  ASSERT_TRUE(plan.ok()) << plan.status().ToString();
  ASSERT_EQ(plan->shards.size(), 1u);
  // "x.d/y.jpg" sorts between "x.a" and "x.z" as a path, but is the sample "x.d/y".
  // By key, then field: "a" before "a-b", though the path "a-b.jpg" sorts before "a.cls".
  EXPECT_EQ(Paths(plan->shards[0]), (std::vector<std::string>{"a.cls", "a.jpg", "a-b.jpg", "b.cls",
                                                              "b.jpg", "x.a", "x.z", "x.d/y.jpg"}));
  EXPECT_EQ(plan->samples, 5);
  EXPECT_EQ(plan->shards[0].samples, 5);
  EXPECT_EQ(plan->shards[0].first_key, "a");
  EXPECT_EQ(plan->shards[0].last_key, "x.d/y");
  EXPECT_EQ(plan->files, 8);
  EXPECT_EQ(plan->input_bytes, 33);
}

// Samples of two 512-byte files take 2048 tar bytes each.
std::vector<InputFile> PairSamples(int n) {
  std::vector<InputFile> files;
  for (int i = 0; i < n; ++i) {
    files.push_back({"s" + std::to_string(i) + ".jpg", 512});
    files.push_back({"s" + std::to_string(i) + ".cls", 512});
  }
  return files;
}

TEST(PlanShards, AShardEndsBeforeTheSampleThatWouldTakeItPastTheTarget) {
  auto exact = PlanShards(PairSamples(5), 6144 + kTarEndBytes);
  ASSERT_TRUE(exact.ok());
  ASSERT_EQ(exact->shards.size(), 2u);  // 3 + 2 samples
  EXPECT_EQ(exact->shards[0].samples, 3);
  EXPECT_EQ(exact->shards[0].tar_bytes, 6144 + kTarEndBytes);
  EXPECT_EQ(exact->shards[1].samples, 2);
  EXPECT_EQ(exact->shards[1].first_key, "s3");
  EXPECT_EQ(exact->shards[1].last_key, "s4");

  auto one_byte_less = PlanShards(PairSamples(5), 6143 + kTarEndBytes);
  ASSERT_TRUE(one_byte_less.ok());
  ASSERT_EQ(one_byte_less->shards.size(), 3u);  // 2 + 2 + 1
  for (const auto& shard : one_byte_less->shards) {
    // Never one file of a sample without the other: 4096 bytes would fit a third file.
    EXPECT_EQ(shard.files.size() % 2, 0u);
    EXPECT_LE(shard.tar_bytes, 6143 + kTarEndBytes);
  }
  EXPECT_EQ(one_byte_less->shards[1].first_key, "s2");
}

TEST(PlanShards, ASampleLargerThanTheTargetIsAShardOfItsOwn) {
  auto files = PairSamples(2);
  files.push_back({"s0z.bin", 100'000});  // between s0 and s1
  auto plan = PlanShards(files, 8192);
  ASSERT_TRUE(plan.ok());
  ASSERT_EQ(plan->shards.size(), 3u);
  EXPECT_EQ(Paths(plan->shards[1]), std::vector<std::string>{"s0z.bin"});
  EXPECT_GT(plan->shards[1].tar_bytes, 8192);
  EXPECT_EQ(plan->shards[0].first_key, "s0");
  EXPECT_EQ(plan->shards[2].first_key, "s1");
}

TEST(PlanShards, BadInputIsRefusedNamingTheReason) {
  auto empty = PlanShards({}, 4096);
  ASSERT_FALSE(empty.ok());
  EXPECT_EQ(empty.status().message(), "no file to pack");

  auto small = PlanShards(PairSamples(1), 4095);
  ASSERT_FALSE(small.ok());
  EXPECT_NE(small.status().message().find("at least 4096"), std::string::npos);

  auto twice = PlanShards({{"a.jpg", 1}, {"b.jpg", 1}, {"a.jpg", 2}}, 4096);
  ASSERT_FALSE(twice.ok());
  EXPECT_EQ(twice.status().message(), "a.jpg: listed twice");

  auto negative = PlanShards({{"a.jpg", -1}}, 4096);
  ASSERT_FALSE(negative.ok());
  EXPECT_NE(negative.status().message().find("a.jpg: size -1"), std::string::npos);

  auto no_field = PlanShards({{"a.jpg", 1}, {"README", 1}}, 4096);
  ASSERT_FALSE(no_field.ok());
  EXPECT_NE(no_field.status().message().find("README: has no extension"), std::string::npos);
}

}  // namespace
}  // namespace cohort::data
