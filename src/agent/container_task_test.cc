#include "agent/container_task.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>

namespace cohort::agent {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

ContainerTask Task() {
  ContainerTask c;
  c.podman = "/usr/bin/podman";
  c.oci_runtime = "runc";
  c.image = "127.0.0.1:5000/team/pytorch:2.1";
  c.insecure = true;
  c.name = ContainerNameOf("3f9a0c1d2e4b5a6f", "7.2.worker.1");
  c.nofile = 20000;
  c.nproc = 4096;
  c.memory_bytes = int64_t{1} << 30;
  c.mounts = {{"/var/lib/cohort/tasks/7.2-worker-1", false}, {"/data/cache", true}};
  c.devices = {"/dev/nvidia1", "/dev/nvidiactl"};
  c.cache_dir = "/var/lib/cohort/agent/images";
  c.cache_bytes = int64_t{200} << 30;
  return c;
}

// The value after `flag` each time it appears.
std::vector<std::string> ValuesOf(const std::vector<std::string>& argv, const std::string& flag) {
  std::vector<std::string> values;
  for (size_t i = 0; i + 1 < argv.size(); ++i) {
    if (argv[i] == flag) values.push_back(argv[i + 1]);
  }
  return values;
}

TEST(ContainerTask, NamesAreTheTaskIdInPodmansAlphabet) {
  EXPECT_EQ(ContainerNameOf("3f9a0c1d2e4b5a6f", "7.2.worker.1"),
            "cohort-3f9a0c1d2e4b-7.2.worker.1");
  EXPECT_EQ(ContainerNameOf("ab", "12/main/0 x"), "cohort-ab-12-main-0-x");
}

TEST(ContainerTask, RunsTheCommandAsTheAccountWithItsMountsDevicesAndLimits) {
  ContainerTask c = Task();
  std::vector<std::string> argv =
      PodmanRunCommand(c, 1001, 1002, "/var/lib/cohort/tasks/7.2-worker-1/work", "/t/container.env",
                       {"python3", "train.py", "--lr", "0.1"});
  ASSERT_GE(argv.size(), 6u);
  EXPECT_THAT(std::vector<std::string>(argv.begin(), argv.begin() + 4),
              ElementsAre("/usr/bin/podman", "--runtime", "runc", "run"));
  // The image, then the command, last.
  auto image = std::find(argv.begin(), argv.end(), c.image);
  ASSERT_NE(image, argv.end());
  EXPECT_THAT(std::vector<std::string>(image + 1, argv.end()),
              ElementsAre("python3", "train.py", "--lr", "0.1"));
  EXPECT_THAT(ValuesOf(argv, "--user"), ElementsAre("1001:1002"));
  EXPECT_THAT(ValuesOf(argv, "--name"), ElementsAre("cohort-3f9a0c1d2e4b-7.2.worker.1"));
  EXPECT_THAT(ValuesOf(argv, "--network"), ElementsAre("host"));
  EXPECT_THAT(ValuesOf(argv, "--workdir"), ElementsAre("/var/lib/cohort/tasks/7.2-worker-1/work"));
  EXPECT_THAT(ValuesOf(argv, "--env-file"), ElementsAre("/t/container.env"));
  EXPECT_THAT(
      ValuesOf(argv, "--volume"),
      ElementsAre("/var/lib/cohort/tasks/7.2-worker-1:/var/lib/cohort/tasks/7.2-worker-1:rw",
                  "/data/cache:/data/cache:ro"));
  EXPECT_THAT(ValuesOf(argv, "--device"), ElementsAre("/dev/nvidia1", "/dev/nvidiactl"));
  EXPECT_THAT(ValuesOf(argv, "--ulimit"), ElementsAre("nofile=20000:20000", "nproc=4096:4096"));
  EXPECT_THAT(ValuesOf(argv, "--memory"), ElementsAre("1073741824"));
  EXPECT_THAT(ValuesOf(argv, "--pull"), ElementsAre("never"));
  EXPECT_THAT(ValuesOf(argv, "--cap-drop"), ElementsAre("all"));
  EXPECT_THAT(ValuesOf(argv, "--security-opt"), ElementsAre("no-new-privileges"));
  for (const char* flag : {"--rm", "--init"}) {
    EXPECT_NE(std::find(argv.begin(), image, flag), image) << flag;
  }
}

TEST(ContainerTask, WithoutLimitsPodmansOwnApply) {
  ContainerTask c = Task();
  c.nofile = c.nproc = c.memory_bytes = 0;
  c.oci_runtime = "";
  std::vector<std::string> argv = PodmanRunCommand(c, 0, 0, "/w", "/e", {"true"});
  EXPECT_EQ(argv[1], "run");
  EXPECT_TRUE(ValuesOf(argv, "--ulimit").empty());
  EXPECT_TRUE(ValuesOf(argv, "--memory").empty());
}

TEST(ContainerTask, PullsWithoutTlsChecksOnlyFromAnInsecureRegistry) {
  ContainerTask c = Task();
  EXPECT_THAT(PodmanPullCommand(c),
              ElementsAre("/usr/bin/podman", "pull", "--tls-verify=false", c.image));
  c.insecure = false;
  EXPECT_THAT(PodmanPullCommand(c), ElementsAre("/usr/bin/podman", "pull", c.image));
  EXPECT_THAT(PodmanRemoveCommand(c), ElementsAre("/usr/bin/podman", "--runtime", "runc", "rm",
                                                  "--force", "--ignore", "--time", "0", c.name));
}

TEST(ContainerTask, ReadsBackWhatItWrites) {
  ContainerTask c = Task();
  auto back = ContainerTaskFromJson(ToJson(c));
  ASSERT_TRUE(back.ok()) << back.status().message();
  EXPECT_EQ(*back, c);
  EXPECT_FALSE(ContainerTaskFromJson(Json{{"podman", "/usr/bin/podman"}}).ok());
}

TEST(ContainerTask, TheEnvironmentFileRefusesWhatPodmanCannotRead) {
  auto file = ContainerEnvFile({{"A", "1"}, {"B", "x=y z"}});
  ASSERT_TRUE(file.ok());
  EXPECT_EQ(*file, "A=1\nB=x=y z\n");
  auto broken = ContainerEnvFile({{"KEY", "line 1\nline 2"}});
  ASSERT_FALSE(broken.ok());
  EXPECT_THAT(broken.status().message(), HasSubstr("variable KEY holds a line break"));
  auto long_one = ContainerEnvFile({{"BIG", std::string(70 * 1024, 'x')}});
  ASSERT_FALSE(long_one.ok());
  EXPECT_THAT(long_one.status().message(), HasSubstr("variable BIG is 71680 bytes long"));
}

TEST(ContainerTask, SaysWhyAContainerDidNotRunItsCommand) {
  ContainerTask c = Task();
  auto missing = ContainerStartProblemOf(
      1, "ERROR (catatonit:6): failed to exec pid1: No such file or directory\n", c, {"/nope"});
  ASSERT_TRUE(missing.has_value());
  EXPECT_THAT(missing->message, HasSubstr("program \"/nope\" is not in the image"));
  EXPECT_EQ(missing->kind, StartFailure::kProgram);

  auto podman = ContainerStartProblemOf(
      125, "Error: workdir \"/x\" does not exist on container 1234\n", c, {"true"});
  ASSERT_TRUE(podman.has_value());
  EXPECT_THAT(podman->message, HasSubstr("could not start: workdir \"/x\" does not exist"));
  EXPECT_EQ(podman->kind, StartFailure::kWorkdir);

  // A command that ran and failed is the task's own business.
  EXPECT_FALSE(ContainerStartProblemOf(1, "Traceback ...\nValueError\n", c, {"python3"}));
  EXPECT_FALSE(ContainerStartProblemOf(125, "the program printed this\n", c, {"x"}));
}

TEST(ContainerTask, APullOfAnImageTheRegistryLacksFailsForGood) {
  ContainerTask c = Task();
  ContainerStartProblem absent = PullProblemOf(
      "Trying to pull 127.0.0.1:5055/nothere:1...\nError: initializing source "
      "docker://127.0.0.1:5055/nothere:1: reading manifest 1 in 127.0.0.1:5055/nothere: manifest "
      "unknown: manifest unknown\n",
      c);
  EXPECT_EQ(absent.kind, StartFailure::kImage);
  EXPECT_THAT(absent.message, HasSubstr("the registry does not have it"));
  EXPECT_THAT(absent.message, HasSubstr("manifest unknown"));

  ContainerStartProblem down = PullProblemOf(
      "Error: initializing source docker://127.0.0.1:5999/x:2: pinging container registry "
      "127.0.0.1:5999: connect: connection refused\n",
      c);
  EXPECT_EQ(down.kind, std::nullopt) << "a registry that is down may be up for the next attempt";
  EXPECT_THAT(down.message, HasSubstr("connection refused"));
}

}  // namespace
}  // namespace cohort::agent

namespace cohort::agent {
namespace {

// As podman drew it on a 200-column terminal (carriage returns, cursor moves, redraws).
constexpr std::string_view kDrawn =
    "Trying to pull 127.0.0.1:5055/cohort-big:1...\r\n"
    "Getting image source signatures\r\n"
    "Copying blob 8332a06c466a [=======>-----] 29.0MiB / 143.1MiB\r\n"
    "Copying blob 7d65cc8b24a1 .                \r\n"
    "\x1b[2A\x1b[JCopying blob 8332a06c466a [===========>-] 120.4MiB / 143.1MiB\r\n"
    "Copying blob 7d65cc8b24a1 skipped: already exists  \r\n"
    "Copying blob 0aa1 [>----] 512.0KiB / 2.0GiB\r\n";

TEST(PullProgressReader, AddsTheLayersBeingFetched) {
  PullProgressReader reader;
  reader.Feed(kDrawn.substr(0, 100));  // in pieces, as a terminal gives it
  reader.Feed(kDrawn.substr(100));
  EXPECT_EQ(reader.done_bytes(), int64_t(120.4 * 1024 * 1024) + 512 * 1024);
  EXPECT_EQ(reader.total_bytes(), int64_t(143.1 * 1024 * 1024) + (int64_t{2} << 30));
  EXPECT_EQ(reader.TakeLines(),
            "Trying to pull 127.0.0.1:5055/cohort-big:1...\nGetting image source signatures\n");
  EXPECT_EQ(reader.TakeLines(), "") << "taken once";
  reader.Feed(
      "\x1b[3A\x1b[JCopying blob 8332a06c466a done  \r\nCopying blob 0aa1 done\r\n"
      "Writing manifest to image destination\r\nError: something\r\n");
  EXPECT_EQ(reader.done_bytes(), reader.total_bytes());
  EXPECT_EQ(reader.TakeLines(), "Writing manifest to image destination\nError: something\n");
}

TEST(PullProgressReader, KeepsItsTextBounded) {
  PullProgressReader reader;
  for (int i = 0; i < 10000; ++i) reader.Feed("a line that is not progress at all\n");
  EXPECT_LE(reader.TakeLines().size(), PullProgressReader::kMaxKeptText);
  reader.Feed(std::string(1 << 20, 'x'));  // no line end: not podman's
  reader.Feed("\n");
  EXPECT_EQ(reader.TakeLines(), "");
}

}  // namespace
}  // namespace cohort::agent
