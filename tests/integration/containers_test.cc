// Issue 31, items 1, 3 and 7: tasks in OCI images through Debian's podman (rootful, runc on this
// machine's hybrid cgroups), pulled from a real registry: Debian's docker-registry on loopback,
// holding an image built here without network (buildah from scratch and busybox-static).
#include <fcntl.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/wait.h>
#include <unistd.h>

#include <fmt/format.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <mutex>
#include <regex>

#include "common/strings.h"
#include "model/json.h"
#include "os/process.h"
#include "store/directory_store.h"
#include "tests/integration/local_cluster.h"
#include "tests/integration/pty_cohort.h"

namespace cohort::testing {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

constexpr const char* kPodman = "/usr/bin/podman";
constexpr const char* kBuildah = "/usr/bin/buildah";
constexpr const char* kRegistry = "/usr/bin/docker-registry";
constexpr const char* kBusybox = "/bin/busybox";
// Built once per test process, in the node's image store.
constexpr const char* kLocalImage = "localhost/cohort-test-busybox:1";

CommandResult MustRun(const std::vector<std::string>& args) {
  CommandResult r = RunCommand(args);
  EXPECT_EQ(r.exit_code, 0) << Join(args, " ") << ": " << r.out << r.err;
  return r;
}

// A 2 MB image of busybox-static, every applet linked in /bin: no network, a few seconds.
void BuildImageOnce() {
  static std::once_flag once;
  std::call_once(once, [] {
    if (RunCommand({kPodman, "image", "exists", kLocalImage}).exit_code == 0) return;
    std::string ctr = std::string(Trim(MustRun({kBuildah, "from", "scratch"}).out));
    std::string root = std::string(Trim(MustRun({kBuildah, "mount", ctr}).out));
    std::filesystem::create_directories(root + "/bin");
    std::filesystem::create_directories(root + "/tmp");
    std::filesystem::copy_file(kBusybox, root + "/bin/busybox");
    for (const std::string& applet : Split(MustRun({kBusybox, "--list"}).out, '\n')) {
      if (applet.empty() || applet == "busybox") continue;
      std::filesystem::create_symlink("busybox", root + "/bin/" + applet);
    }
    MustRun({kBuildah, "unmount", ctr});
    MustRun({kBuildah, "config", "--cmd", "/bin/sh", "--env", "PATH=/bin", ctr});
    MustRun({kBuildah, "commit", "--rm", "--quiet", ctr, kLocalImage});
  });
}

// Debian's docker-registry on a loopback port, its storage in `dir`, with the test image pushed
// as cohort/busybox:1. Debian's own /etc/docker/registry/config.yml asks for an htpasswd file
// the package does not make: the registry gets a configuration of its own.
class Registry {
 public:
  explicit Registry(const std::string& dir) : dir_(dir), port_(FreeLoopbackPort()) {
    std::filesystem::create_directories(dir_);
    std::ofstream(dir_ + "/config.yml") << fmt::format(
        "version: 0.1\nlog:\n  level: warn\nstorage:\n  filesystem:\n    rootdirectory: {}/data\n"
        "http:\n  addr: 127.0.0.1:{}\n",
        dir_, port_);
    auto pid = Spawn({kRegistry, "serve", dir_ + "/config.yml"},
                     SpawnOptions{dir_ + "/registry.log", /*new_session=*/false, {}});
    EXPECT_TRUE(pid.ok()) << pid.status().ToString();
    pid_ = pid.ok() ? *pid : 0;
    EXPECT_TRUE(WaitFor([&] {
      return RunCommand({"/usr/bin/curl", "-sf", fmt::format("http://{}/v2/", host())}).exit_code ==
             0;
    })) << ReadFileOrEmpty(dir_ + "/registry.log");
    BuildImageOnce();
    MustRun({kPodman, "push", "--quiet", "--tls-verify=false", kLocalImage, image()});
  }
  ~Registry() {
    // The node's copies of what the tests pulled, by this registry's (random) port.
    for (const std::string& name : pulled_) RunCommand({kPodman, "rmi", "--force", name});
    if (pid_ <= 0) return;
    ::kill(pid_, SIGTERM);
    if (!WaitFor([&] { return ::waitpid(pid_, nullptr, WNOHANG) == pid_; },
                 std::chrono::seconds(10))) {
      ::kill(pid_, SIGKILL);
      ::waitpid(pid_, nullptr, 0);
    }
  }
  std::string host() const { return fmt::format("127.0.0.1:{}", port_); }
  // Removed from the node's store when the registry goes.
  void Pulled(const std::string& image) { pulled_.insert(image); }
  // The pushed image, qualified.
  std::string image() {
    std::string name = host() + "/cohort/busybox:1";
    pulled_.insert(name);
    return name;
  }

 private:
  std::string dir_;
  int port_;
  pid_t pid_ = 0;
  std::set<std::string> pulled_;
};

// Stand-ins for a node's GPU device nodes (character devices, as /dev/null), so that a
// container's --device can be seen: only its own GPUs' appear inside.
std::string FakeGpuDevices(const std::string& dir, int gpus) {
  std::filesystem::create_directories(dir);
  for (int i = 0; i < gpus; ++i) {
    std::string node = fmt::format("{}/nvidia{}", dir, i);
    EXPECT_EQ(::mknod(node.c_str(), S_IFCHR | 0666, makedev(1, 3)), 0) << node;
  }
  return dir + "/nvidia";
}

// Two agents at 127.0.0.2 and .3 with 2 GPUs each that run tasks in images, a master that pulls
// from the registry, and jobs of a Cohort user mapped to the account nobody (65534).
class ContainerCluster {
 public:
  // `agent_args` for both agents; node-a carries label zone=a, node-b zone=b.
  explicit ContainerCluster(const std::string& name, std::vector<std::string> agent_args = {})
      : cluster(name), registry(cluster.dir() + "/registry"), agent_args_(std::move(agent_args)) {
    cluster.StartMaster({"--insecure-image-registry", registry.host()});
    for (const char* node : {"node-a", "node-b"}) {
      FakeGpuDevices(cluster.dir() + "/dev-" + node, 2);
      StartAgent(node);
    }
    auto mapped = cluster.client().UpdateUser(TestAccount(), Json{{"uid", 65534}, {"gid", 65534}});
    EXPECT_TRUE(mapped.ok()) << mapped.status().ToString();
  }
  void StartAgent(const std::string& node) {
    std::vector<std::string> args = {"--address",
                                     node == "node-a" ? "127.0.0.2" : "127.0.0.3",
                                     "--label",
                                     node == "node-a" ? "zone=a" : "zone=b",
                                     "--runtime",
                                     "podman",
                                     "--gpu-device-prefix",
                                     cluster.dir() + "/dev-" + node + "/nvidia"};
    args.insert(args.end(), agent_args_.begin(), agent_args_.end());
    cluster.StartAgent(node, 2, args);
  }
  // The UUID of GPU `index` of `node`, as its agent reported it.
  std::string GpuUuid(const std::string& node, int index) {
    auto nodes = cluster.client().Nodes();
    if (!nodes.ok()) return "";
    for (const Json& n : nodes->at("nodes")) {
      if (n.value("id", "") != node) continue;
      for (const Json& g : n.at("gpus")) {
        if (g.value("index", -1) == index) return g.value("uuid", "");
      }
    }
    return "";
  }
  // A test that fails mid-way leaves tasks running: their containers go with the cluster.
  ~ContainerCluster() {
    for (const char* node : {"node-a", "node-b"}) {
      std::string instance(Trim(ReadFileOrEmpty(cluster.AgentDir(node) + "/instance")));
      if (instance.empty()) continue;
      std::string names = RunCommand({kPodman, "ps", "--all", "--format", "{{.Names}}", "--filter",
                                      "name=^cohort-" + instance.substr(0, 12) + "-"})
                              .out;
      for (const std::string& name : Split(names, '\n')) {
        if (!name.empty()) RunCommand({kPodman, "rm", "--force", "--time", "0", name});
      }
    }
  }
  LocalCluster cluster;
  Registry registry;

 private:
  std::vector<std::string> agent_args_;
};

// The containers on the machine of job `id` of `cluster`, whose agents' instances name them.
std::string ContainersOf(LocalCluster& cluster, JobId id) {
  std::string names;
  for (const char* node : {"node-a", "node-b"}) {
    std::string instance(Trim(ReadFileOrEmpty(cluster.AgentDir(node) + "/instance")));
    if (instance.empty()) continue;
    names += RunCommand({kPodman, "ps", "--all", "--format", "{{.Names}}", "--filter",
                         fmt::format("name=^cohort-{}-{}\\.", instance.substr(0, 12), id)})
                 .out;
  }
  return names;
}

TEST(Containers, TwoReplicasRunInTheImageWithTheirOwnGpusAndTheJobsEnvironment) {
  ASSERT_EQ(::geteuid(), 0) << "the agent runs rootful podman: the tests run as root";
  ContainerCluster c("containers");
  // No registry named: the cluster's default.
  JobId id = c.cluster.Submit(fmt::format(R"yaml(
name: in-image
framework: pytorch
tasks:
  - role: worker
    replicas: 2
    distinct_nodes: true
    image: cohort/busybox:1
    resources: {{gpus: 1, cpus: 0.5, memory: 256Mi}}
    env: {{NODES_DEVICES: "{}"}}
    command:
      - sh
      - -c
      - |
        echo "rank=$RANK uid=$(id -u) gid=$(id -g) cuda=$CUDA_VISIBLE_DEVICES"
        echo "devices=$(ls $NODES_DEVICES/dev-node-* | tr '\n' ' ')"
        echo "pid1=$(tr '\0' ' ' < /proc/1/cmdline)"
        echo "rendezvous=$MASTER_ADDR:$MASTER_PORT world=$WORLD_SIZE home=$HOME"
        echo "node-python=$(test -e /usr/bin/python3 && echo yes || echo no)"
        echo "from rank $RANK" > "$COHORT_OUTPUT_DIR/rank-$RANK.txt"
)yaml",
                                          c.cluster.dir()));
  Job job = c.cluster.WaitForState(id, JobState::kSucceeded, std::chrono::seconds(120));
  ASSERT_EQ(job.state, JobState::kSucceeded) << c.cluster.EventsText(id) << c.cluster.Logs(id);
  EXPECT_EQ(job.spec.tasks[0].image, c.registry.host() + "/cohort/busybox:1")
      << "qualified with the cluster's registry when it was submitted";
  ASSERT_EQ(job.tasks.size(), 2u);
  EXPECT_NE(job.tasks[0].node_id, job.tasks[1].node_id);
  for (int rank = 0; rank < 2; ++rank) {
    const Task& t = job.tasks[rank];
    ASSERT_EQ(t.gpus.size(), 1u);
    std::string log = c.cluster.Logs(id, fmt::format("worker/{}", rank));
    EXPECT_THAT(log, HasSubstr(fmt::format("rank={} uid=65534 gid=65534 cuda={}", rank,
                                           c.GpuUuid(t.node_id, t.gpus[0]))))
        << "the job's account, and its GPU by UUID, which means the same inside: " << log;
    EXPECT_THAT(log, HasSubstr(fmt::format("devices=nvidia{} \n", t.gpus[0])))
        << "only its own GPU's device node: " << log;
    EXPECT_THAT(log, HasSubstr("pid1=/run/podman-init --")) << log;
    EXPECT_THAT(log, HasSubstr("rendezvous=127.0.0.2:")) << "host network: " << log;
    EXPECT_THAT(log, HasSubstr("world=2 home=/")) << log;
    EXPECT_THAT(log, HasSubstr("/work\n")) << "HOME is the task's scratch directory: " << log;
    EXPECT_THAT(log, HasSubstr("node-python=no")) << "the image's files, not the node's: " << log;
  }
  // Both nodes are this machine, with one podman store: the first task pulled the image, the
  // other may have found it there.
  EXPECT_THAT(c.cluster.Logs(id, "worker/0") + c.cluster.Logs(id, "worker/1"),
              HasSubstr("cohort: pulling image " + job.spec.tasks[0].image));
  EXPECT_THAT(c.cluster.EventsText(id),
              ::testing::ContainsRegex("image: worker/[01] on node-[ab]: pulled image " +
                                       c.registry.host() + "/cohort/busybox:1"));
  // The outputs the tasks wrote inside became the job's artifacts.
  Job stored = c.cluster.WaitForJob(
      id, [](const Job& j) { return j.artifacts && j.artifacts->state == UploadState::kStored; },
      std::chrono::seconds(30));
  ASSERT_TRUE(stored.artifacts) << c.cluster.EventsText(id);
  EXPECT_GE(stored.artifacts->files_total, 1) << c.cluster.EventsText(id);
  // Nothing of either container is left on the node.
  EXPECT_EQ(ContainersOf(c.cluster, id), "");
}

TEST(Containers, AShellSessionRunsInTheImageAsTheJobsUserWithItsGpu) {
  ASSERT_EQ(::geteuid(), 0);
  ContainerCluster c("containers-shell");
  PtyCohort shell(c.cluster,
                  {"shell", "--gpus", "1", "--cpus", "0.1", "--image", "cohort/busybox:1"},
                  c.cluster.admin_token());
  ASSERT_TRUE(shell.WaitFor("attached to session", std::chrono::seconds(90))) << shell.seen();
  const JobId id = std::atoll(shell.seen().c_str() + shell.seen().find("session ") + 8);
  EXPECT_NE(ContainersOf(c.cluster, id), "") << "running in a container";
  // The image's busybox shell (its $SHELL unset: /bin/sh), as nobody, with the GPU's UUID and a
  // terminal of the window's size; the terminal server is the one file mounted from the node.
  shell.Type("id -u; readlink /bin/sh; echo \"cuda=$CUDA_VISIBLE_DEVICES\"; stty size\r");
  EXPECT_TRUE(shell.WaitFor("\n65534")) << shell.seen();
  EXPECT_TRUE(shell.WaitFor("\nbusybox")) << shell.seen();
  EXPECT_TRUE(shell.WaitFor("cuda=GPU-")) << shell.seen();
  EXPECT_TRUE(shell.WaitFor("30 100")) << shell.seen();
  shell.Type("exit 4\r");
  EXPECT_EQ(shell.WaitExit(), 4) << shell.seen();
  Job ended = c.cluster.WaitForState(id, JobState::kFailed);
  EXPECT_THAT(ended.message, HasSubstr("exit"));
  EXPECT_TRUE(WaitFor([&] { return ContainersOf(c.cluster, id).empty(); }));
}

TEST(Containers, AKilledTaskGetsSigtermInsideAndItsContainerIsRemoved) {
  ASSERT_EQ(::geteuid(), 0);
  ContainerCluster c("containers-kill");
  // One handles SIGTERM; the other ignores it, and is killed after its grace period.
  JobId polite = c.cluster.Submit(R"(
name: polite
tasks:
  - role: main
    image: cohort/busybox:1
    command: [sh, -c, 'trap "echo got TERM; exit 0" TERM; echo ready; while true; do sleep 0.1; done']
)");
  JobId stubborn = c.cluster.Submit(R"(
name: stubborn
grace_period: 1s
tasks:
  - role: main
    image: cohort/busybox:1
    command: [sh, -c, 'trap "" TERM; echo ready; while true; do sleep 0.1; done']
)");
  for (JobId id : {polite, stubborn}) {
    ASSERT_TRUE(WaitFor([&] { return c.cluster.Logs(id).find("ready") != std::string::npos; },
                        std::chrono::seconds(90)))
        << c.cluster.EventsText(id) << c.cluster.Logs(id);
    EXPECT_NE(ContainersOf(c.cluster, id), "") << "running in a container";
    ASSERT_TRUE(c.cluster.client().Kill(id).ok());
  }
  for (JobId id : {polite, stubborn}) {
    Job job = c.cluster.WaitForState(id, JobState::kKilled, std::chrono::seconds(30));
    EXPECT_EQ(job.state, JobState::kKilled) << c.cluster.EventsText(id);
    EXPECT_EQ(ContainersOf(c.cluster, id), "")
        << "the container is gone, even the one podman could not stop";
  }
  EXPECT_THAT(c.cluster.Logs(polite), HasSubstr("got TERM"));
}

TEST(Containers, AnAgentThatRestartsAdoptsTasksInContainersAsItAdoptsBareOnes) {
  ASSERT_EQ(::geteuid(), 0);
  ContainerCluster c("containers-restart");
  JobId id = c.cluster.Submit(R"(
name: survivor
tasks:
  - role: main
    image: cohort/busybox:1
    command: [sh, -c, 'echo start; while [ ! -e "$HOME/go" ]; do sleep 0.1; done; echo end']
)");
  Job before = c.cluster.WaitForJob(
      id, [](const Job& j) { return j.state == JobState::kRunning && j.tasks[0].pid != 0; },
      std::chrono::seconds(90));
  ASSERT_TRUE(WaitFor([&] { return c.cluster.Logs(id).find("start") != std::string::npos; },
                      std::chrono::seconds(60)))
      << c.cluster.Logs(id);
  const std::string node = before.tasks[0].node_id;
  c.cluster.StopAgent(node);
  EXPECT_NE(ContainersOf(c.cluster, id), "") << "it runs on without its agent";
  c.StartAgent(node);
  // The task's scratch directory, its HOME: the same path inside and out.
  const std::string go = fmt::format("{}/tasks/{}.1.main.0/work/go", c.cluster.AgentDir(node), id);
  std::ofstream(go) << "go\n";
  Job after = c.cluster.WaitForState(id, JobState::kSucceeded, std::chrono::seconds(60));
  EXPECT_EQ(after.state, JobState::kSucceeded) << c.cluster.EventsText(id);
  EXPECT_EQ(after.attempt, 1) << "the attempt must not run twice";
  EXPECT_EQ(after.tasks[0].pid, before.tasks[0].pid) << "the same podman, adopted";
  EXPECT_THAT(c.cluster.Logs(id), HasSubstr("start\nend\n"));
  EXPECT_EQ(ContainersOf(c.cluster, id), "");
}

TEST(Containers, TheImageCacheKeepsItsBoundNeverEvictsAnImageInUseAndPlacementPrefersItsNodes) {
  ASSERT_EQ(::geteuid(), 0);
  // A bound of one byte: after each pull, every other image Cohort pulled goes if it can.
  ContainerCluster c("containers-cache", {"--image-cache-size", "1"});
  std::vector<std::string> images;
  for (int tag = 2; tag <= 4; ++tag) {
    images.push_back(fmt::format("{}/cohort/busybox:{}", c.registry.host(), tag));
    MustRun({kPodman, "push", "--quiet", "--tls-verify=false", kLocalImage, images.back()});
    c.registry.Pulled(images.back());
  }
  auto exists = [](const std::string& image) {
    return RunCommand({kPodman, "image", "exists", image}).exit_code == 0;
  };
  auto spec = [](const std::string& name, const std::string& image, const std::string& command) {
    return fmt::format(
        "name: {}\nconstraints: {{labels: {{zone: b}}}}\ntasks:\n  - role: main\n    image: {}\n"
        "    command: [sh, -c, '{}']\n",
        name, image, command);
  };
  // On node-b: one that runs until told, in image :2; meanwhile another pulls :3.
  JobId holding = c.cluster.Submit(
      spec("holding", images[0], "echo up; while [ ! -e $HOME/go ]; do sleep 0.1; done"));
  ASSERT_TRUE(WaitFor([&] { return c.cluster.Logs(holding).find("up") != std::string::npos; },
                      std::chrono::seconds(90)))
      << c.cluster.EventsText(holding) << c.cluster.Logs(holding);
  JobId second = c.cluster.Submit(spec("second", images[1], "true"));
  Job done = c.cluster.WaitForState(second, JobState::kSucceeded, std::chrono::seconds(90));
  ASSERT_EQ(done.state, JobState::kSucceeded) << c.cluster.EventsText(second);
  EXPECT_TRUE(exists(images[0])) << "in use by a running container: never evicted";
  std::ofstream(fmt::format("{}/tasks/{}.1.main.0/work/go", c.cluster.AgentDir("node-b"), holding))
      << "go\n";
  ASSERT_EQ(c.cluster.WaitForState(holding, JobState::kSucceeded, std::chrono::seconds(30)).state,
            JobState::kSucceeded);
  // A third pull: the two older images, in use no more, go; the newest stays.
  JobId third = c.cluster.Submit(spec("third", images[2], "true"));
  ASSERT_EQ(c.cluster.WaitForState(third, JobState::kSucceeded, std::chrono::seconds(90)).state,
            JobState::kSucceeded)
      << c.cluster.EventsText(third);
  EXPECT_FALSE(exists(images[0]));
  EXPECT_FALSE(exists(images[1]));
  EXPECT_TRUE(exists(images[2]));

  // node-b reported that it holds :4 with the third job's end; a job free to run anywhere goes
  // there.
  JobId anywhere = c.cluster.Submit(fmt::format(
      "name: anywhere\ntasks:\n  - role: main\n    image: {}\n    command: [\"true\"]\n",
      images[2]));
  Job placed = c.cluster.WaitForState(anywhere, JobState::kSucceeded, std::chrono::seconds(60));
  ASSERT_EQ(placed.state, JobState::kSucceeded) << c.cluster.EventsText(anywhere);
  EXPECT_EQ(placed.tasks[0].node_id, "node-b") << "the node that holds its image";
  EXPECT_THAT(c.cluster.Logs(anywhere), Not(HasSubstr("pulling image")));
}

TEST(Containers, AMissingImageOrProgramFailsTheJobWithTheRuntimesReason) {
  ASSERT_EQ(::geteuid(), 0);
  ContainerCluster c("containers-bad");
  JobId missing = c.cluster.Submit(R"(
name: no-such-image
tasks:
  - role: main
    image: cohort/no-such-image:1
    command: ["true"]
)");
  JobId bad_program = c.cluster.Submit(R"(
name: no-such-program
tasks:
  - role: main
    image: cohort/busybox:1
    command: [/opt/train.py]
)");
  Job m = c.cluster.WaitForState(missing, JobState::kFailed, std::chrono::seconds(90));
  EXPECT_EQ(m.state, JobState::kFailed) << c.cluster.EventsText(missing);
  EXPECT_EQ(m.attempt, 1) << "no retry makes the registry have it";
  EXPECT_THAT(c.cluster.EventsText(missing),
              HasSubstr("cannot pull image " + c.registry.host() +
                        "/cohort/no-such-image:1 (the registry does not have it)"));
  EXPECT_THAT(c.cluster.EventsText(missing), HasSubstr("manifest unknown"));

  Job p = c.cluster.WaitForState(bad_program, JobState::kFailed, std::chrono::seconds(90));
  EXPECT_EQ(p.state, JobState::kFailed) << c.cluster.EventsText(bad_program);
  EXPECT_EQ(p.attempt, 1);
  EXPECT_THAT(c.cluster.EventsText(bad_program),
              HasSubstr("program \"/opt/train.py\" is not in the image"));

  // A registry the cluster does not pull from, or a malformed reference: refused at once.
  for (const auto& [image, said] :
       {std::pair<std::string, std::string>{
            "registry.example.com/team/x:1",
            "tasks[0].image: registry registry.example.com is not one this cluster pulls "
            "from (" +
                c.registry.host() + ")"},
        std::pair<std::string, std::string>{"Team/X", "not an image reference"}}) {
    auto r = c.cluster.client().Submit(fmt::format(
        "name: refused\ntasks:\n  - role: main\n    image: {}\n    command: [echo]\n", image));
    ASSERT_FALSE(r.ok()) << image;
    EXPECT_THAT(r.status().ToString(), HasSubstr(said)) << image;
  }
}

TEST(Containers, ANodeWithoutARuntimeIsNeverGivenImageJobsAndWhySaysSo) {
  LocalCluster cluster("containers-none");
  cluster.StartMaster({"--insecure-image-registry", "127.0.0.1:5999"});
  cluster.StartAgent("node-a", 1, {"--runtime", "none"});
  JobId id = cluster.Submit(R"(
name: needs-podman
tasks:
  - role: main
    image: cohort/busybox:1
    command: ["true"]
)");
  std::string why;
  ASSERT_TRUE(WaitFor([&] {
    auto r = cluster.Cohort({"why", std::to_string(id)});
    why = r.out;
    return why.find("the scheduler says") != std::string::npos;
  })) << why;
  EXPECT_THAT(why, HasSubstr("no ready node has label cohort.runtime=podman")) << why;
  EXPECT_THAT(why, HasSubstr("only nodes whose agent runs containers")) << why;
  EXPECT_EQ(cluster.client().GetJob(id)->state, JobState::kPending);
  auto label = cluster.Cohort({"node", "list"});
  // An admin cannot claim the runtime with a label of their own.
  CommandResult refused = RunCommand({BinDir() + "/cohortd", "agent", "--label",
                                      "cohort.runtime=podman", "--master", cluster.url()});
  EXPECT_EQ(refused.exit_code, 2);
  EXPECT_THAT(refused.err, HasSubstr("labels under \"cohort.\" are the agent's own"));
  // An agent's runtime flags are checked before it joins.
  for (const auto& [args, said] :
       {std::pair<std::vector<std::string>, std::string>{{"--runtime", "docker"},
                                                         "--runtime: \"docker\" is not a runtime"},
        {{"--oci-runtime", "kata"}, "--oci-runtime: \"kata\" is not one"},
        {{"--runtime", "podman", "--image-cache-size", "lots"}, "--image-cache-size: "}}) {
    std::vector<std::string> agent = {
        "/usr/bin/timeout", "20",          BinDir() + "/cohortd", "agent",
        "--master",         cluster.url(), "--data-dir",          cluster.dir() + "/refused-agent"};
    agent.insert(agent.end(), args.begin(), args.end());
    CommandResult r = RunCommand(agent);
    EXPECT_EQ(r.exit_code, 2) << said << ": " << r.err;
    EXPECT_THAT(r.err, HasSubstr(said));
  }
  // A master names its registries as image references name them: HOST[:PORT].
  for (const auto& [flag, registry, said] :
       {std::tuple{"--image-registry", "https://registry.example.com", "port \"//registry"},
        std::tuple{"--insecure-image-registry", "127.0.0.1:99999", "port \"99999\""},
        std::tuple{"--image-registry", "reg/istry", "is not a registry HOST[:PORT]"}}) {
    // Bounded: a master that took the flag would serve until killed.
    CommandResult master =
        RunCommand({"/usr/bin/timeout", "20", BinDir() + "/cohortd", "master", "--data-dir",
                    cluster.dir() + "/refused-master", "--listen", "127.0.0.1:0", flag, registry});
    EXPECT_EQ(master.exit_code, 2) << registry;
    EXPECT_THAT(master.err, HasSubstr(fmt::format("cohortd master: {}: \"{}\" is not a registry",
                                                  flag, registry)))
        << master.err;
    EXPECT_THAT(master.err, HasSubstr(said)) << master.err;
  }
}

}  // namespace
}  // namespace cohort::testing
