// (f) A master whose data directory fills up: `cohort submit` is refused with an error that says
// so, `cohort jobs` still lists every acknowledged job, a restart on the full disk keeps them,
// and once space is freed submissions are taken again. The disk is a small tmpfs the test mounts
// over the master's data directory, which takes root (CI runs the tests as root); without root
// the test fails and says why rather than passing without testing anything.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <sys/mount.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <thread>
#include <vector>

#include "client/http_client.h"
#include "tests/integration/local_cluster.h"

namespace cohort::testing {
namespace {

namespace fs = std::filesystem;
using ::testing::HasSubstr;

// A tmpfs of `size` over `dir` for the life of the object.
class TmpfsMount {
 public:
  TmpfsMount(std::string dir, const std::string& size) : dir_(std::move(dir)) {
    fs::create_directories(dir_);
    if (::geteuid() != 0) {
      error_ = "mounting a tmpfs needs root (CI runs the tests as root): run this test as root";
      return;
    }
    std::string options = "size=" + size;
    if (::mount("tmpfs", dir_.c_str(), "tmpfs", 0, options.c_str()) != 0) {
      error_ = "mount -t tmpfs -o " + options + " " + dir_ + ": " + std::strerror(errno);
      return;
    }
    mounted_ = true;
  }
  // Detached even while the master still has files open there; gone once it exits.
  ~TmpfsMount() {
    if (mounted_) ::umount2(dir_.c_str(), MNT_DETACH);
  }
  TmpfsMount(const TmpfsMount&) = delete;
  TmpfsMount& operator=(const TmpfsMount&) = delete;

  const std::string& error() const { return error_; }

 private:
  std::string dir_;
  bool mounted_ = false;
  std::string error_;
};

// Writes to `path` until the disk refuses: returns how many bytes went in.
int64_t FillDisk(const std::string& path) {
  std::ofstream out(path, std::ios::binary);
  std::string chunk(4096, 'x');
  int64_t written = 0;
  while (out.write(chunk.data(), static_cast<std::streamsize>(chunk.size())) && out.flush()) {
    written += static_cast<int64_t>(chunk.size());
  }
  return written;
}

std::string SpecNamed(const std::string& name) {
  return "name: " + name + "\ntasks: [{role: main, resources: {gpus: 1}, command: [\"true\"]}]\n";
}

TEST(FullDisk, SubmitIsRefusedClearlyAndEveryAcknowledgedJobIsKept) {
  LocalCluster cluster("full-disk");
  // Declared after the cluster, so unmounted before the cluster stops the master.
  TmpfsMount disk(cluster.dir() + "/master", "4m");
  ASSERT_TRUE(disk.error().empty()) << disk.error();
  // No reserve: the disk fills between two checks of its free space, and writes find it full.
  cluster.StartMaster({"--state-disk-reserve", "0"});
  // No agent: the jobs stay pending, so the master has nothing of its own to write.
  std::vector<std::string> names;
  for (int i = 0; i < 5; ++i) {
    names.push_back("acknowledged-" + std::to_string(i));
    cluster.Submit(SpecNamed(names.back()));
  }

  const std::string filler = cluster.dir() + "/master/filler";
  ASSERT_GT(FillDisk(filler), 0);
  std::string spec_file = cluster.dir() + "/refused.yaml";
  std::ofstream(spec_file) << SpecNamed("refused");
  CommandResult submit = cluster.Cohort({"submit", spec_file});
  EXPECT_NE(submit.exit_code, 0) << submit.out;
  EXPECT_THAT(submit.err, HasSubstr("the state database's disk is full"));
  EXPECT_THAT(submit.err, HasSubstr(cluster.dir() + "/master/"));
  // The API answers 507 Insufficient Storage, with the code a client can act on.
  auto http = cluster.Http();
  ASSERT_TRUE(http.ok());
  auto answer = (*http)->Request("POST", "/api/v1/jobs", SpecNamed("refused"), "application/yaml");
  ASSERT_TRUE(answer.ok()) << answer.status().ToString();
  EXPECT_EQ(answer->status, 507) << answer->body;
  EXPECT_THAT(answer->body, HasSubstr("\"resource_exhausted\""));
  auto refused = cluster.client().Submit(SpecNamed("refused"));
  EXPECT_EQ(refused.status().code(), StatusCode::kResourceExhausted) << refused.status().ToString();

  auto expect_every_acknowledged_job = [&] {
    CommandResult jobs = cluster.Cohort({"jobs"});
    ASSERT_EQ(jobs.exit_code, 0) << jobs.err;
    for (const auto& name : names) EXPECT_THAT(jobs.out, HasSubstr(name));
    EXPECT_THAT(jobs.out, ::testing::Not(HasSubstr("refused")));
    auto listed = cluster.client().ListJobs();
    ASSERT_TRUE(listed.ok()) << listed.status().ToString();
    EXPECT_EQ(listed->size(), names.size());
  };
  expect_every_acknowledged_job();

  // A restart on the disk that is still full loses nothing either.
  cluster.StopMaster();
  cluster.StartMaster({"--state-disk-reserve", "0"});
  expect_every_acknowledged_job();
  submit = cluster.Cohort({"submit", spec_file});
  EXPECT_NE(submit.exit_code, 0) << submit.out;
  EXPECT_THAT(submit.err, HasSubstr("disk is full"));

  // Space freed: the same master takes work again.
  fs::remove(filler);
  submit = cluster.Cohort({"submit", spec_file});
  EXPECT_EQ(submit.exit_code, 0) << submit.err;
  names.push_back("refused");
  CommandResult jobs = cluster.Cohort({"jobs"});
  EXPECT_THAT(jobs.out, HasSubstr("refused"));
  auto listed = cluster.client().ListJobs();
  ASSERT_TRUE(listed.ok());
  EXPECT_EQ(listed->size(), names.size());
}

// (g) The same disk with a reserve: the master goes read-only before writes fail, instead of
// stopping at the first report it cannot write (and again after every restart). It keeps
// serving reads, its agents' syncs and a job's log; changes get 503 with the reason; a task that
// ends meanwhile is recorded once there is room, and the master never restarted.
TEST(FullDisk, AMasterShortOfSpaceGoesReadOnlyServesReadsAndSyncsAndResumes) {
  LocalCluster cluster("read-only");
  TmpfsMount disk(cluster.dir() + "/master", "8m");
  ASSERT_TRUE(disk.error().empty()) << disk.error();
  cluster.StartMaster({"--state-disk-reserve", "1Mi", "--node-timeout", "3s"});
  cluster.StartAgent("a1", 1);
  const std::string go = cluster.dir() + "/go";
  JobId job = cluster.Submit(
      "name: outlives-the-full-disk\n"
      "tasks: [{role: main, resources: {gpus: 1}, command: [sh, -c, 'echo started; while [ ! "
      "-e " +
      go + " ]; do sleep 0.1; done; echo finished']}]\n");
  cluster.WaitForState(job, JobState::kRunning);
  // Shipped before the disk fills: uploads wait (503) while the master is read-only.
  ASSERT_TRUE(WaitFor([&] { return cluster.Logs(job).find("started") != std::string::npos; }));
  const pid_t master = cluster.master_pid();
  auto http = cluster.Http();
  ASSERT_TRUE(http.ok());
  auto health = [&] {
    auto answer = (*http)->Request("GET", "/api/v1/health", "", "");
    return answer.ok() ? answer->body : answer.status().ToString();
  };

  const std::string filler = cluster.dir() + "/master/filler";
  ASSERT_GT(FillDisk(filler), 0);
  ASSERT_TRUE(WaitFor([&] { return health().find("read_only") != std::string::npos; })) << health();
  EXPECT_THAT(health(), HasSubstr("--state-disk-reserve"));

  auto submit = (*http)->Request("POST", "/api/v1/jobs", SpecNamed("refused"), "application/yaml");
  ASSERT_TRUE(submit.ok());
  EXPECT_EQ(submit->status, 503) << submit->body;
  EXPECT_THAT(submit->body, HasSubstr("read-only"));
  CommandResult refused = cluster.Cohort({"kill", std::to_string(job)});
  EXPECT_NE(refused.exit_code, 0);
  EXPECT_THAT(refused.err, HasSubstr("read-only"));

  // The task ends while the master is read-only: it is heard, not recorded; longer than the
  // node timeout passes and the node stays READY.
  std::ofstream(go) << "go";
  std::this_thread::sleep_for(std::chrono::seconds(5));
  CommandResult jobs = cluster.Cohort({"jobs"});
  ASSERT_EQ(jobs.exit_code, 0) << jobs.err;
  EXPECT_THAT(jobs.out, HasSubstr("outlives-the-full-disk"));
  EXPECT_EQ(cluster.client().GetJob(job)->state, JobState::kRunning);
  CommandResult nodes = cluster.Cohort({"nodes"});
  ASSERT_EQ(nodes.exit_code, 0) << nodes.err;
  EXPECT_THAT(nodes.out, HasSubstr("READY"));
  EXPECT_THAT(nodes.out, ::testing::Not(HasSubstr("LOST")));
  EXPECT_THAT(cluster.Logs(job), HasSubstr("started"));

  fs::remove(filler);
  cluster.WaitForState(job, JobState::kSucceeded);
  EXPECT_THAT(cluster.Logs(job), HasSubstr("finished"));
  EXPECT_EQ(cluster.master_pid(), master);
  EXPECT_TRUE(ProcessAlive(master));
  EXPECT_EQ(cluster.Submit(SpecNamed("after")) > 0, true);
}

TEST(FullDisk, ABadReserveIsRefusedNamingTheFlag) {
  for (const char* reserve : {"lots", "-1Mi"}) {
    auto master = RunCommand({BinDir() + "/cohortd", "master", "--state-disk-reserve", reserve,
                              "--data-dir", "/tmp/cohort-disk-reserve-never-created"});
    EXPECT_EQ(master.exit_code, 2) << reserve;
    EXPECT_THAT(master.err, HasSubstr("--state-disk-reserve: ")) << reserve;
    EXPECT_FALSE(fs::exists("/tmp/cohort-disk-reserve-never-created")) << reserve;
  }
}

}  // namespace
}  // namespace cohort::testing
