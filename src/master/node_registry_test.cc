#include "master/node_registry.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

namespace cohort::master {
namespace {

using std::chrono::seconds;
using ::testing::ElementsAre;

Node MakeNode(const std::string& id, int gpus, PortRange ports = {31000, 31002}) {
  Node node;
  node.info.id = id;
  node.info.address = "10.0.0.1";
  node.info.ports = ports;
  for (int i = 0; i < gpus; ++i) node.info.gpus.push_back(Gpu{i, "GPU-" + id, "H100", 0, "", 0});
  return node;
}

TEST(NodeRegistry, ANewNodeGetsAVersionAndTopologyAReregisteredOneKeepsItsVersion) {
  NodeRegistry nodes;
  nodes.VersionsAbove(100);
  NodeRegistry::Entry& a = nodes.Put(MakeNode("a", 2));
  EXPECT_EQ(a.version, 101u);
  ASSERT_NE(a.topology, nullptr);
  NodeRegistry::Entry& b = nodes.Put(MakeNode("b", 1));
  EXPECT_EQ(b.version, 102u);
  NodeRegistry::Entry& again = nodes.Put(MakeNode("a", 4));
  EXPECT_EQ(again.version, 101u) << "the agent's applied version stays comparable";
  EXPECT_EQ(again.node.info.gpus.size(), 4u);
  EXPECT_EQ(nodes.size(), 2u);
}

TEST(NodeRegistry, VersionsOnlyRise) {
  NodeRegistry nodes;
  nodes.Put(MakeNode("a", 1));
  uint64_t first = nodes.Bump("a");
  nodes.VersionsAbove(5);  // from the loaded tasks' versions: higher than any so far
  uint64_t second = nodes.Bump("a");
  EXPECT_GT(second, first);
  EXPECT_GT(second, 5u);
  nodes.VersionsAbove(1);
  EXPECT_GT(nodes.Bump("a"), second);
  EXPECT_EQ(nodes.Bump("nope"), 0u);
}

TEST(NodeRegistry, PortsGoRoundRobinAndSkipThoseInUse) {
  NodeRegistry nodes;
  NodeRegistry::Entry& a = nodes.Put(MakeNode("a", 1, {31000, 31002}));
  EXPECT_EQ(NodeRegistry::AssignPort(a, {}), 31000);
  EXPECT_EQ(NodeRegistry::AssignPort(a, {31000}), 31001);
  EXPECT_EQ(NodeRegistry::AssignPort(a, {31000, 31002}), 31001) << "wraps around, skips used";
  EXPECT_EQ(NodeRegistry::AssignPort(a, {31000, 31001, 31002}), 0) << "none free";
}

TEST(NodeRegistry, SilentForNamesTheNodesNotLostThatWereSilentTooLong) {
  NodeRegistry nodes;
  Timestamp now = FromMicros(1'000'000'000);
  Node quiet = MakeNode("quiet", 1);
  quiet.last_seen = now - seconds(11);
  Node recent = MakeNode("recent", 1);
  recent.last_seen = now - seconds(10);
  Node lost = MakeNode("lost", 1);
  lost.last_seen = now - seconds(60);
  lost.state = NodeState::kLost;
  nodes.Put(quiet);
  nodes.Put(recent);
  nodes.Put(lost);
  EXPECT_THAT(nodes.SilentFor(seconds(10), now), ElementsAre("quiet"));
}

TEST(NodeRegistry, RemoveAndFind) {
  NodeRegistry nodes;
  nodes.Put(MakeNode("a", 1));
  EXPECT_NE(nodes.Find("a"), nullptr);
  EXPECT_TRUE(nodes.Remove("a"));
  EXPECT_EQ(nodes.Find("a"), nullptr);
  EXPECT_FALSE(nodes.Remove("a"));
}

}  // namespace
}  // namespace cohort::master
