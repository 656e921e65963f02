// Jobs whose tasks run in images (docs/runtimes.md), through the master's parts: the reference
// qualified with the cluster's registry, only nodes with a container runtime, the pull in the
// job's message and events, and placement that prefers nodes holding the image.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "master/master_parts_test_fixture.h"

namespace cohort::master {
namespace {

using ::testing::HasSubstr;

class ImageJobsTest : public MasterPartsTest {
 protected:
  void SetUp() override {
    MasterConfig config;
    config.image_registries = {{"127.0.0.1:5000", true}};
    Wire(config);
  }
  void AddRuntimeNode(const std::string& id) {
    NodeInfo info = NodeInfoOf(id, 1);
    info.labels[std::string(kRuntimeLabel)] = std::string(kPodmanRuntime);
    ASSERT_TRUE(parts_->reconciler.Register(info).ok());
  }
  static JobSpec InImage(const std::string& image) {
    JobSpec spec = GangSpec(1, 1);
    spec.tasks[0].image = image;
    return spec;
  }
  // The agent on `node` reports its task running, with `pull`.
  void ReportPull(const std::string& node, const ImagePull& pull) {
    AgentReport report = ReportOf(node, TaskState::kRunning);
    for (auto& t : report.tasks) t.image_pull = pull;
    ASSERT_TRUE(parts_->reconciler.Sync(node, report).ok());
  }
};

TEST_F(ImageJobsTest, OnlyANodeWithARuntimeRunsItWithTheQualifiedImage) {
  AddNode("bare", 1);
  JobId id = Submit(InImage("team/x:1"));
  loop_->RunPosted();
  EXPECT_EQ(job(id).state, JobState::kPending) << "the only node runs no containers";
  EXPECT_EQ(job(id).spec.tasks[0].image, "127.0.0.1:5000/team/x:1");
  AddRuntimeNode("podman-node");
  loop_->RunPosted();
  ASSERT_EQ(job(id).state, JobState::kStarting) << job(id).message;
  EXPECT_EQ(job(id).tasks[0].node_id, "podman-node");
  auto desired = parts_->reconciler.DesiredFor("podman-node");
  ASSERT_TRUE(desired.ok());
  ASSERT_EQ(desired->tasks.size(), 1u);
  EXPECT_EQ(desired->tasks[0].image, "127.0.0.1:5000/team/x:1");
  EXPECT_TRUE(desired->tasks[0].image_insecure);
}

TEST_F(ImageJobsTest, APullIsTheJobsMessageWhileItStartsAndTwoEvents) {
  AddRuntimeNode("n");
  JobId id = Started(InImage("team/x:1"));
  const std::string image = "127.0.0.1:5000/team/x:1";
  ReportPull("n", ImagePull{image, 120 << 20, 800 << 20, false, std::chrono::seconds(14)});
  // Its supervisor runs: the task, and so the job, counts as running while the image comes.
  ASSERT_EQ(job(id).state, JobState::kRunning);
  ReportPull("n", ImagePull{image, 300 << 20, 800 << 20, false, std::chrono::seconds(16)});
  EXPECT_EQ(job(id).message,
            "attempt 1 running: worker/0 on n: pulling image " + image + ": 300Mi of 800Mi (16s)");
  // Within 5 s the message stays: a long pull does not rewrite the job at every report.
  ReportPull("n", ImagePull{image, 500 << 20, 800 << 20, false, std::chrono::seconds(17)});
  EXPECT_THAT(job(id).message, HasSubstr("300Mi of 800Mi"));
  clock_.Advance(std::chrono::seconds(5));
  ReportPull("n", ImagePull{image, 600 << 20, 800 << 20, false, std::chrono::seconds(22)});
  EXPECT_THAT(job(id).message, HasSubstr("600Mi of 800Mi"));
  for (int i = 0; i < 3; ++i) {
    ReportPull("n", ImagePull{image, 800 << 20, 800 << 20, true, std::chrono::seconds(42)});
  }
  const std::string events = EventsText(id);
  EXPECT_THAT(events, HasSubstr("image: worker/0 on n: pulling image " + image + "\n"));
  EXPECT_THAT(events,
              HasSubstr("image: worker/0 on n: pulled image " + image + ": 800Mi in 42s\n"));
  EXPECT_EQ(job(id).message, "attempt 1 running") << "the pull is over";
  size_t first = events.find("pulled image");
  EXPECT_EQ(events.find("pulled image", first + 1), std::string::npos) << "once: " << events;
}

TEST_F(ImageJobsTest, PlacementPrefersTheNodesThatHoldItsImages) {
  AddRuntimeNode("a");
  AddRuntimeNode("b");
  AgentReport report = ReportOf("b", TaskState::kRunning);
  report.cached_images = std::vector<std::string>{"127.0.0.1:5000/team/x:1"};
  ASSERT_TRUE(parts_->reconciler.Sync("b", report).ok());
  JobId id = Started(InImage("team/x:1"));
  EXPECT_EQ(job(id).tasks[0].node_id, "b");
  EXPECT_EQ(parts_->scheduling.NodesHoldingImages(job(id)), (std::set<std::string>{"b"}));
  JobId other = Started(InImage("team/y:1"));
  EXPECT_TRUE(parts_->scheduling.NodesHoldingImages(job(other)).empty());
}

}  // namespace
}  // namespace cohort::master
