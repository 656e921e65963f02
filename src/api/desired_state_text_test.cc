// DesiredStateText writes what JsonText(ToJson(state)) writes, a task at a time.
#include "api/desired_state_text.h"

#include <gtest/gtest.h>

#include "api/request_params.h"
#include "model/json.h"

namespace cohort::api {
namespace {

TEST(DesiredStateText, IsTheTextOfTheWholeDocument) {
  DesiredState empty;
  EXPECT_EQ(DesiredStateText(empty), JsonText(ToJson(empty)));

  DesiredState state;
  state.version = 1763771690136811;
  for (int i = 0; i < 3; ++i) {
    TaskLaunch launch;
    launch.id = TaskId{7, 2, "worker", i};
    launch.command = {"python3", "train.py", "--name", "\"quoted\"\n"};
    // Text JSON must escape, and bytes that are not UTF-8 (replaced, as every answer does).
    launch.env = {{"A", "\x01\x02 tab\t"}, {"B", std::string("\xff\xfe", 2)}, {"C", "é"}};
    launch.gpus = {i};
    launch.run_as.user = "ada";
    launch.checkpoint_dir = "/s/7/checkpoints";
    state.tasks.push_back(launch);
  }
  state.forget = {TaskId{6, 1, "ps", 0}, TaskId{6, 1, "worker", 3}};
  state.node_timeout = std::chrono::seconds(30);  // what fencing agents count by
  // Every field of the document is set: one the text leaves out fails the comparison.
  StoreAccess access;
  access.endpoint = "http://127.0.0.1:7480";
  access.secret_key = "s3cr3t";
  state.allow_uploads = {{"5.1.worker.0", access}};
  state.refuse_uploads = {{"4.1.worker.0", "over quota"}};
  state.forget_uploads = {"3.1.worker.0"};
  state.prefetch = {
      DatasetPrefetch{"vision/imagenet:3", "datasets/vision/imagenet/3.json", access}};
  EXPECT_EQ(DesiredStateText(state), JsonText(ToJson(state)));
  EXPECT_NE(DesiredStateText(state).find("\"node_timeout_ms\":30000"), std::string::npos);
  auto back = ParseJson(DesiredStateText(state));
  ASSERT_TRUE(back.ok());
  auto parsed = DesiredStateFromJson(*back);
  ASSERT_TRUE(parsed.ok()) << parsed.status().ToString();
  EXPECT_EQ(parsed->tasks.size(), 3u);
  EXPECT_EQ(parsed->forget.size(), 2u);
  EXPECT_EQ(parsed->allow_uploads.at("5.1.worker.0").secret_key, "s3cr3t");
  EXPECT_EQ(parsed->refuse_uploads.at("4.1.worker.0"), "over quota");
  EXPECT_EQ(parsed->forget_uploads, std::vector<std::string>{"3.1.worker.0"});
  ASSERT_EQ(parsed->prefetch.size(), 1u);
  EXPECT_EQ(parsed->prefetch[0].manifest_key, "datasets/vision/imagenet/3.json");
  EXPECT_EQ(parsed->prefetch[0].store.secret_key, "s3cr3t");
}

}  // namespace
}  // namespace cohort::api
