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
  NodeRegistry::Entry& a = nodes.Put(MakeNode("a", 2), MonoTime{});
  EXPECT_EQ(a.version, 101u);
  ASSERT_NE(a.topology, nullptr);
  NodeRegistry::Entry& b = nodes.Put(MakeNode("b", 1), MonoTime{});
  EXPECT_EQ(b.version, 102u);
  NodeRegistry::Entry& again = nodes.Put(MakeNode("a", 4), MonoTime{});
  EXPECT_EQ(again.version, 101u) << "the agent's applied version stays comparable";
  EXPECT_EQ(again.node.info.gpus.size(), 4u);
  EXPECT_EQ(nodes.size(), 2u);
}

TEST(NodeRegistry, VersionsOnlyRise) {
  NodeRegistry nodes;
  nodes.Put(MakeNode("a", 1), MonoTime{});
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
  NodeRegistry::Entry& a = nodes.Put(MakeNode("a", 1, {31000, 31002}), MonoTime{});
  EXPECT_EQ(NodeRegistry::AssignPort(a, {}), 31000);
  EXPECT_EQ(NodeRegistry::AssignPort(a, {31000}), 31001);
  EXPECT_EQ(NodeRegistry::AssignPort(a, {31000, 31002}), 31001) << "wraps around, skips used";
  EXPECT_EQ(NodeRegistry::AssignPort(a, {31000, 31001, 31002}), 0) << "none free";
}

TEST(NodeRegistry, SilentForNamesTheNodesNotLostThatWereSilentTooLong) {
  NodeRegistry nodes;
  MonoTime now{std::chrono::hours(5)};
  nodes.Put(MakeNode("quiet", 1), now - seconds(11));
  nodes.Put(MakeNode("recent", 1), now - seconds(10));
  Node lost = MakeNode("lost", 1);
  lost.state = NodeState::kLost;
  nodes.Put(lost, now - seconds(60));
  EXPECT_THAT(nodes.SilentFor(seconds(10), now), ElementsAre("quiet"));
}

TEST(NodeRegistry, SilenceIsMeasuredFromWhenItWasHeardNotFromItsWallClockRecord) {
  NodeRegistry nodes;
  MonoTime now{std::chrono::hours(5)};
  Node stepped = MakeNode("stepped", 1);
  stepped.last_seen = FromMicros(0);  // a wall clock stepped far back since
  nodes.Put(stepped, now);
  EXPECT_THAT(nodes.SilentFor(seconds(10), now + seconds(5)), ::testing::IsEmpty());
  EXPECT_THAT(nodes.SilentFor(seconds(10), now + seconds(11)), ElementsAre("stepped"));
}

TEST(NodeRegistry, RestartSilencesGivesEveryNodeAWholeTimeoutFromThen) {
  NodeRegistry nodes;
  MonoTime now{std::chrono::hours(5)};
  nodes.Put(MakeNode("a", 1), now - seconds(30));
  nodes.Put(MakeNode("b", 1), now + seconds(2));  // heard after: keeps its later time
  nodes.RestartSilences(now);
  EXPECT_THAT(nodes.SilentFor(seconds(10), now + seconds(10)), ::testing::IsEmpty());
  EXPECT_THAT(nodes.SilentFor(seconds(10), now + seconds(11)), ElementsAre("a"));
  EXPECT_EQ(nodes.Find("b")->heard_at, now + seconds(2));
}

TEST(NodeRegistry, RemoveAndFind) {
  NodeRegistry nodes;
  nodes.Put(MakeNode("a", 1), MonoTime{});
  EXPECT_NE(nodes.Find("a"), nullptr);
  EXPECT_TRUE(nodes.Remove("a"));
  EXPECT_EQ(nodes.Find("a"), nullptr);
  EXPECT_FALSE(nodes.Remove("a"));
}

}  // namespace
}  // namespace cohort::master
