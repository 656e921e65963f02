// A job's outputs in a real S3 store (a single-node Ceph RADOS Gateway, scripts/ceph.sh): the
// master names the bucket, each job's agent gets credentials for the job's keys only, and a
// gateway that stops answering holds up no job, only the upload, which goes on once it is back.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/stat.h>

#include <fmt/format.h>

#include <fstream>

#include "store/ceph_gateway_test_fixture.h"
#include "tests/integration/local_cluster.h"

namespace cohort::testing {
namespace {

using ::testing::HasSubstr;

::testing::Environment* const kCeph = ::testing::AddGlobalTestEnvironment(new store::CephGateway);

constexpr const char* kOutputs = R"(
name: writes-outputs
tasks:
  - role: worker
    resources: {gpus: 1, cpus: 1, memory: 256Mi}
    command: [/bin/sh, -c, 'echo 0.97 > "$COHORT_OUTPUT_DIR/accuracy.txt" && head -c 9000000 /dev/urandom > "$COHORT_OUTPUT_DIR/model.bin"']
)";

bool Stored(const Job& job) {
  return job.artifacts && job.artifacts->state == UploadState::kStored;
}

// The connection file of the gateway's user, with the role that per-job credentials come from.
std::string ConnectionFile(const LocalCluster& cluster) {
  const store::CephGateway& ceph = *store::CephGateway::Get();
  std::string path = cluster.dir() + "/s3.yaml";
  std::ofstream(path) << fmt::format(
      "endpoint: {}\nregion: {}\naccess_key: {}\nsecret_key: {}\nrole_arn: {}\n",
      ceph.connection().endpoint, ceph.connection().region, ceph.connection().access_key,
      ceph.connection().secret_key, ceph.role_arn());
  ::chmod(path.c_str(), 0600);
  return path;
}

std::map<std::string, int64_t> Objects(const std::string& prefix) {
  auto s3 = store::S3Store::Open(store::CephGateway::Get()->connection(),
                                 store::S3Location{store::CephGateway::kBucket, "cluster"});
  EXPECT_TRUE(s3.ok());
  std::map<std::string, int64_t> out;
  if (!s3.ok()) return out;
  auto page = (*s3)->List(prefix, "", 1000);
  EXPECT_TRUE(page.ok()) << page.status().ToString();
  if (page.ok()) {
    for (const auto& o : page->objects) out[o.key] = o.size;
  }
  return out;
}

TEST(ArtifactsOnCeph, AJobsOutputsGoToTheBucketAndAStalledGatewayHoldsUpNoJob) {
  LocalCluster cluster("artifacts-s3");
  cluster.StartMaster({"--store", fmt::format("s3://{}/cluster", store::CephGateway::kBucket),
                       "--store-config", ConnectionFile(cluster)});
  cluster.StartAgent("node-a", 1);
  JobId id = cluster.Submit(kOutputs);
  Job done = cluster.WaitForJob(id, Stored, std::chrono::seconds(60));
  ASSERT_TRUE(Stored(done)) << cluster.EventsText(id);
  auto objects = Objects(fmt::format("jobs/{}/", id));
  EXPECT_EQ(objects[fmt::format("jobs/{}/outputs/model.bin", id)], 9000000);
  EXPECT_EQ(objects[fmt::format("jobs/{}/outputs/accuracy.txt", id)], 5);
  // The master's secret key is in no log of the cluster's.
  const std::string& secret = store::CephGateway::Get()->connection().secret_key;
  EXPECT_EQ(ReadFileOrEmpty(cluster.dir() + "/master.log").find(secret), std::string::npos);
  EXPECT_EQ(ReadFileOrEmpty(cluster.AgentLog("node-a")).find(secret), std::string::npos);

  // The gateway stops answering (paused): the next job still ends, and its outputs wait.
  pid_t gateway = store::CephGateway::Get()->GatewayPid();
  ASSERT_GT(gateway, 0);
  ASSERT_EQ(::kill(gateway, SIGSTOP), 0);
  JobId next = cluster.Submit(kOutputs);
  Job ended = cluster.WaitForState(next, JobState::kSucceeded, std::chrono::seconds(60));
  EXPECT_EQ(ended.state, JobState::kSucceeded) << cluster.EventsText(next);
  std::this_thread::sleep_for(std::chrono::seconds(3));
  Job waiting = *cluster.client().GetJob(next);
  EXPECT_FALSE(Stored(waiting)) << "stored while the gateway was paused?";
  ASSERT_EQ(::kill(gateway, SIGCONT), 0);
  Job stored = cluster.WaitForJob(next, Stored, std::chrono::seconds(120));
  EXPECT_TRUE(Stored(stored)) << cluster.EventsText(next);
  EXPECT_EQ(Objects(fmt::format("jobs/{}/outputs/", next)).size(), 2u);
}

}  // namespace
}  // namespace cohort::testing
