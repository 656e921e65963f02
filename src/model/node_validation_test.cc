#include "model/node_validation.h"

#include <fmt/format.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <string>

#include "model/limits.h"

namespace cohort {
namespace {

using ::testing::ElementsAre;
using ::testing::IsEmpty;

NodeInfo GoodNode() {
  NodeInfo n;
  n.id = "gpu-node-7.rack2";
  n.address = "10.1.2.3";
  n.milli_cpus = 64000;
  n.memory_bytes = int64_t{512} << 30;
  n.gpus.push_back(Gpu{0, "GPU-a", "H100", int64_t{80} << 30, "00000000:01:00.0", 0});
  n.gpus.push_back(Gpu{1, "GPU-b", "H100", int64_t{80} << 30, "00000000:02:00.0", 1});
  n.gpu_links.push_back(GpuLink{0, 1, GpuLinkType::kNvLink, 18});
  n.gpu_source = "nvml";
  n.labels = {{"rack", "r2"}, {"example.com/zone", "a"}};
  n.agent_version = "0.1.0";
  return n;
}

std::vector<std::string> Problems(const NodeInfo& n) { return ValidateNodeInfo(n).details(); }

TEST(ValidateNodeInfo, AcceptsARealNode) {
  Status s = ValidateNodeInfo(GoodNode());
  EXPECT_TRUE(s.ok()) << s.ToString();
  NodeInfo ipv6 = GoodNode();
  ipv6.address = "fe80::1%eth0";
  EXPECT_TRUE(ValidateNodeInfo(ipv6).ok());
}

TEST(ValidateNodeInfo, ListsEveryProblemByField) {
  NodeInfo n = GoodNode();
  n.id = "../../x";
  n.address = "";
  n.milli_cpus = -9'223'372'036'854'776;
  n.memory_bytes = -1;
  n.ports = {5000, 10};
  Status s = ValidateNodeInfo(n);
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(s.message(), "invalid node registration");
  EXPECT_THAT(
      s.details(),
      ElementsAre("id: \"../../x\" is not a valid node id: use 1 to 64 letters, digits, '.', '_' "
                  "or '-', starting with a letter or digit",
                  "address: \"\" is not a host name or IP address: use 1 to 253 letters, digits, "
                  "'.', '-', '_', ':', '%', '[' or ']'",
                  "cpus: must be greater than 0 and at most 16384, got -9223372036854776m",
                  "memory_bytes: must be greater than 0 and at most 70368744177664 (64Ti), got -1",
                  "ports: 5000-10 is not a port range within 1-65535"));
}

TEST(ValidateNodeInfo, BoundsCpusMemoryAndPorts) {
  NodeInfo n = GoodNode();
  n.milli_cpus = (kMaxNodeCpus + 1) * 1000;
  n.memory_bytes = kMaxNodeMemoryBytes + 1;
  n.ports = {0, 65536};
  EXPECT_THAT(Problems(n),
              ElementsAre("cpus: must be greater than 0 and at most 16384, got 16385",
                          "memory_bytes: must be greater than 0 and at most 70368744177664 (64Ti), "
                          "got 70368744177665",
                          "ports: 0-65536 is not a port range within 1-65535"));
  n = GoodNode();
  n.milli_cpus = kMaxNodeCpus * 1000;
  n.memory_bytes = kMaxNodeMemoryBytes;
  n.ports = {1, 65535};
  EXPECT_THAT(Problems(n), IsEmpty());
  n.ports = {7, 7};
  EXPECT_THAT(Problems(n), IsEmpty());
}

TEST(ValidateNodeInfo, NodeIds) {
  for (const char* ok : {"a", "node-1", "gpu01.cluster", "N_2", "0"}) {
    EXPECT_TRUE(IsValidNodeId(ok)) << ok;
  }
  for (std::string bad : {"", "-a", ".hidden", "_x", "a/b", "..", "a b", "ü", "a\nb"}) {
    EXPECT_FALSE(IsValidNodeId(bad)) << bad;
  }
  EXPECT_TRUE(IsValidNodeId(std::string(64, 'n')));
  EXPECT_FALSE(IsValidNodeId(std::string(65, 'n')));
  EXPECT_TRUE(CheckNodeId("node-1").ok());
  EXPECT_EQ(CheckNodeId("../../etc").message(),
            "node: \"../../etc\" is not a valid node id: use 1 to 64 letters, digits, '.', '_' or "
            "'-', starting with a letter or digit");
}

TEST(ValidateNodeInfo, AddressesCannotCarryCommasOrSpaces) {
  NodeInfo n = GoodNode();
  n.address = "10.0.0.1,10.0.0.2";
  EXPECT_THAT(Problems(n), ElementsAre(::testing::StartsWith("address: \"10.0.0.1,10.0.0.2\" is "
                                                             "not a host name or IP address")));
  n.address = std::string(254, 'a');
  EXPECT_EQ(Problems(n).size(), 1u);
  n.address = std::string(253, 'a');
  EXPECT_THAT(Problems(n), IsEmpty());
}

TEST(ValidateNodeInfo, GpuCountIndicesAndLinks) {
  NodeInfo n = GoodNode();
  n.gpus.assign(65, n.gpus[0]);
  EXPECT_THAT(Problems(n), ElementsAre("gpus: a node has at most 64 GPUs, got 65"));

  n = GoodNode();
  n.gpus[1].index = 0;  // a duplicate
  n.gpus[0].memory_bytes = -5;
  n.gpus[0].numa_node = 5000;
  n.gpus[1].model = std::string(300, 'm');
  EXPECT_THAT(Problems(n),
              ElementsAre("gpus[0].memory_bytes: must be from 0 to 70368744177664 (64Ti), got -5",
                          "gpus[0].numa_node: must be from -1 (unknown) to 1023, got 5000",
                          "gpus[1].index: expected 1, got 0",
                          "gpus[1].model: must be at most 256 characters, got 300"));

  n = GoodNode();
  n.gpus.push_back(Gpu{2, "GPU-c", "H100", 1, "", -1});
  n.gpus.push_back(Gpu{3, "GPU-d", "H100", 1, "", -1});
  n.gpu_links = {GpuLink{0, 7, GpuLinkType::kNvLink, 4}, GpuLink{1, 1, GpuLinkType::kSystem, 0},
                 GpuLink{0, 1, GpuLinkType::kNvLink, 4}, GpuLink{1, 0, GpuLinkType::kSystem, 999}};
  EXPECT_THAT(Problems(n), ElementsAre("gpu_links[0].b: is not the index of a GPU of this node, "
                                       "got 7",
                                       "gpu_links[1]: links GPU 1 to itself",
                                       "gpu_links[3]: GPUs 1 and 0 are linked twice",
                                       "gpu_links[3].nvlinks: must be from 0 to 256, got 999"));
  n = GoodNode();
  n.gpu_links.assign(2, n.gpu_links[0]);
  EXPECT_THAT(Problems(n), ElementsAre("gpu_links: 2 GPUs have at most 1 links (one per pair), "
                                       "got 2"));
}

TEST(ValidateNodeInfo, LabelsAndTextFieldsAreBounded) {
  NodeInfo n = GoodNode();
  n.labels.clear();
  for (size_t i = 0; i <= kMaxLabels; ++i) n.labels[fmt::format("k{}", i)] = "v";
  EXPECT_THAT(Problems(n), ElementsAre("labels: a node has at most 64 labels, got 65"));

  n = GoodNode();
  n.labels = {{"bad key", "v"}, {"rack", std::string(257, 'v')}};
  n.agent_version = std::string(65, '1');
  EXPECT_THAT(Problems(n),
              ElementsAre("labels.\"bad key\": not a valid label name: use 1 to 128 letters, "
                          "digits, '.', '_', '/' and '-'",
                          "labels.\"rack\": must be at most 256 characters, got 257",
                          "agent_version: must be at most 64 characters, got 65"));
}

}  // namespace
}  // namespace cohort
