// (g) An agent reads its GPUs through NVML, loaded at run time: here the test's fake
// libnvidia-ml.so.1, which describes 4 H100s in NVLink pairs.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "tests/integration/local_cluster.h"

namespace cohort::testing {
namespace {

TEST(Nvml, AgentReportsGpusAndTopologyFromNvml) {
  LocalCluster cluster("nvml");
  cluster.StartMaster();
  cluster.StartAgent("gpu-node", /*gpus=*/-1, {"--nvml-library", FakeNvmlLibrary()},
                     {{"FAKE_NVML_GPUS", "4"}});
  auto nodes = cluster.client().Nodes();
  ASSERT_TRUE(nodes.ok());
  const auto& node = (*nodes)["nodes"][0];
  EXPECT_EQ(node["gpu_source"], "nvml");
  ASSERT_EQ(node["gpus"].size(), 4u);
  EXPECT_EQ(node["gpus"][0]["model"], "NVIDIA H100 80GB HBM3");
  EXPECT_EQ(node["gpus"][0]["memory_bytes"], 81559LL * 1024 * 1024);
  EXPECT_NE(node["gpus"][0]["uuid"], node["gpus"][1]["uuid"]);
  bool nvlink01 = false;
  for (const auto& link : node["gpu_links"]) {
    if (link["a"] == 0 && link["b"] == 1) nvlink01 = link["type"] == "nvlink";
  }
  EXPECT_TRUE(nvlink01);
  // And the GPUs are scheduled like any others.
  JobId id = cluster.Submit(R"(
name: on-nvml
tasks: [{role: main, resources: {gpus: 2}, command: [sh, -c, 'echo $CUDA_VISIBLE_DEVICES']}]
)");
  cluster.WaitForState(id, JobState::kSucceeded);
  EXPECT_EQ(cluster.Logs(id), "0,1\n");
}

TEST(Nvml, BrokenDriverIsAClearErrorNotACrash) {
  auto r = RunCommand({BinDir() + "/cohortd", "agent", "--master", "http://127.0.0.1:1",
                       "--nvml-library", FakeNvmlLibrary(), "--data-dir", "/tmp/cohort-nvml-x"},
                      {{"FAKE_NVML_FAIL_INIT", "1"}});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_THAT(r.err, ::testing::HasSubstr("Driver Not Loaded"));
}

}  // namespace
}  // namespace cohort::testing
