// `cohort data put/ls/rm` against a real master and its directory store: a directory put twice
// is stored once (the second put sends no chunk: the master's own request count says so), its
// versions listed and one deleted, bad names refused before anything is sent.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <regex>

#include "model/json.h"
#include "tests/integration/local_cluster.h"

namespace cohort::testing {
namespace {

namespace fs = std::filesystem;
using ::testing::HasSubstr;

// How many chunk uploads the master has answered with a 2xx (its /metrics).
int ChunkPuts(LocalCluster& cluster) {
  auto http = cluster.Http();
  EXPECT_TRUE(http.ok()) << http.status().ToString();
  if (!http.ok()) return -1;
  auto metrics = (*http)->Request("GET", "/metrics");
  EXPECT_TRUE(metrics.ok() && metrics->status == 200);
  if (!metrics.ok()) return -1;
  static const std::regex kCount(
      R"re(cohort_api_request_duration_seconds_count\{route="/api/v1/blobs/\{sha256\}",method="PUT",code="2xx"\} (\d+))re");
  std::smatch m;
  return std::regex_search(metrics->body, m, kCount) ? std::stoi(m[1]) : 0;
}

TEST(DatasetsCli, ADirectoryPutTwiceIsSentOnceAndItsVersionsListedAndDeleted) {
  LocalCluster cluster("clidatasets");
  cluster.StartMaster();
  const fs::path dir = fs::path(cluster.dir()) / "mnist";
  fs::create_directories(dir / "train");
  // Three chunks, 8 + 8 + 4 MiB, the first two alike (the pattern repeats every 8 MiB): sent once.
  std::string big(20 << 20, '\0');
  for (size_t i = 0; i < big.size(); ++i) big[i] = static_cast<char>((i * 131) >> 9);
  std::ofstream(dir / "train" / "images.bin", std::ios::binary) << big;
  std::ofstream(dir / "labels.txt") << "0 1 2\n";
  std::ofstream(dir / "copy.txt") << "0 1 2\n";  // the same chunk as labels.txt: sent once
  fs::create_symlink("/etc/passwd", dir / "link");

  auto first = cluster.Cohort({"data", "put", dir.string(), "mnist", "-o", "json"});
  ASSERT_EQ(first.exit_code, 0) << first.err;
  Json put = *ParseJson(first.out);
  EXPECT_EQ(put["ref"], "mnist:1");
  EXPECT_EQ(put["team"], "default");
  EXPECT_EQ(put["file_count"], 3);
  EXPECT_EQ(put["bytes"], big.size() + 12);
  EXPECT_EQ(put["chunks_sent"], 3);
  EXPECT_THAT(first.err, HasSubstr("left out 1 entry"));
  EXPECT_EQ(ChunkPuts(cluster), 3);

  auto second = cluster.Cohort({"data", "put", dir.string(), "default/mnist", "--public"});
  ASSERT_EQ(second.exit_code, 0) << second.err;
  EXPECT_EQ(second.out, "mnist:2\n");
  EXPECT_THAT(second.err, HasSubstr("0 of " + std::to_string(big.size() + 12) +
                                    " bytes sent: all chunks already stored"));
  EXPECT_EQ(ChunkPuts(cluster), 3);  // the master took no chunk the second time

  auto ls = cluster.Cohort({"data", "ls"});
  ASSERT_EQ(ls.exit_code, 0) << ls.err;
  EXPECT_THAT(ls.out, HasSubstr("mnist"));
  auto versions = cluster.Cohort({"data", "ls", "mnist", "-o", "json"});
  ASSERT_EQ(versions.exit_code, 0) << versions.err;
  Json listed = *ParseJson(versions.out);
  ASSERT_EQ(listed["versions"].size(), 2u);
  EXPECT_EQ(listed["versions"][0]["public"], false);
  EXPECT_EQ(listed["versions"][1]["public"], true);
  auto files = cluster.Cohort({"data", "ls", "default/mnist:2"});
  ASSERT_EQ(files.exit_code, 0) << files.err;
  EXPECT_THAT(files.out, HasSubstr("train/images.bin"));
  EXPECT_THAT(files.out, HasSubstr("labels.txt"));

  auto rm = cluster.Cohort({"data", "rm", "mnist:1"});
  ASSERT_EQ(rm.exit_code, 0) << rm.err;
  EXPECT_THAT(rm.out, HasSubstr("deleted default/mnist:1"));
  auto gone = cluster.Cohort({"data", "ls", "mnist:1"});
  EXPECT_NE(gone.exit_code, 0);
  EXPECT_THAT(gone.err, HasSubstr("no dataset default/mnist:1"));
  auto after = cluster.Cohort({"data", "ls", "mnist", "-o", "json"});
  ASSERT_EQ(after.exit_code, 0) << after.err;
  EXPECT_EQ((*ParseJson(after.out))["versions"].size(), 1u);

  auto bad = cluster.Cohort({"data", "put", dir.string(), "MNIST"});
  EXPECT_NE(bad.exit_code, 0);
  EXPECT_THAT(bad.err, HasSubstr("is not a dataset name"));
  auto no_version = cluster.Cohort({"data", "rm", "mnist"});
  EXPECT_NE(no_version.exit_code, 0);
  EXPECT_THAT(no_version.err, HasSubstr("names no version"));
  EXPECT_EQ(ChunkPuts(cluster), 3);
}

}  // namespace
}  // namespace cohort::testing
