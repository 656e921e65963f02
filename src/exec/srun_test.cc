// srun and scontrol as a batch script runs them: each node of the job an exec service (real
// processes on loopback), srun's environment what the batch script's will be.
#include <fmt/format.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>
#include <thread>

#include "common/strings.h"
#include "exec/exec_test_support.h"
#include "os/process.h"
#include "testing/free_port.h"

namespace cohort::exec {
namespace {

using ::testing::HasSubstr;

constexpr const char* kCredential = "736c75726d2d6a6f62";

using cohort::testing::FreePort;
using testing::Slurp;

std::string ToolsDir() {
  std::string exec = COHORT_EXEC_PATH;
  return exec.substr(0, exec.rfind('/'));
}

// A job of two nodes, gpu1 and gpu2, with two GPUs each, each node an exec service.
class SrunTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = std::filesystem::temp_directory_path() /
           ("srun_test_" + std::to_string(::getpid()) + "_" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    std::filesystem::create_directories(dir_);
    std::vector<std::string> endpoints;
    for (const char* node : {"gpu1", "gpu2"}) {
      int port = FreePort();
      SpawnOptions options;
      options.output = (dir_ / (std::string(node) + ".log")).string();
      options.env = {{"COHORT_JOB_CREDENTIAL", kCredential},
                     {"CUDA_VISIBLE_DEVICES", node == std::string("gpu1") ? "0,1" : "2,3"},
                     {"SLURM_JOB_ID", "77"},
                     {"TMPDIR", dir_.string()}};
      auto pid = Spawn({COHORT_EXEC_PATH, "serve", "--port", std::to_string(port)}, options);
      ASSERT_TRUE(pid.ok());
      services_.push_back(*pid);
      endpoints.push_back(fmt::format("{}=127.0.0.1:{}", node, port));
    }
    env_ = {{"COHORT_JOB_CREDENTIAL", kCredential},
            {"COHORT_EXEC_ENDPOINTS", Join(endpoints, ",")},
            {"SLURM_JOB_NODELIST", "gpu[1-2]"},
            {"SLURM_TASKS_PER_NODE", "2(x2)"},
            {"TMPDIR", dir_.string()}};
  }
  void TearDown() override {
    for (pid_t pid : services_) {
      ::kill(pid, SIGTERM);
      int status;
      ::waitpid(pid, &status, 0);
    }
    std::filesystem::remove_all(dir_);
  }

  // Runs srun ARGS with the batch script's environment; its stdout in `out`, stderr in `err`.
  int Srun(std::vector<std::string> args, std::string* out, std::string* err = nullptr,
           const std::string& program = "srun") {
    std::vector<std::string> argv = {ToolsDir() + "/slurm/" + program};
    argv.insert(argv.end(), args.begin(), args.end());
    std::string script = (dir_ / "run.sh").string();
    std::ofstream(script) << "exec \"$@\" > " << (dir_ / "out").string() << " 2> "
                          << (dir_ / "err").string() << "\n";
    std::vector<std::string> wrapped = {"/bin/sh", script};
    wrapped.insert(wrapped.end(), argv.begin(), argv.end());
    SpawnOptions options;
    options.env = env_;
    int status = RunToCompletion(wrapped, options);
    *out = Slurp((dir_ / "out").string());
    if (err) *err = Slurp((dir_ / "err").string());
    return status;
  }

  std::filesystem::path dir_;
  std::vector<pid_t> services_;
  std::map<std::string, std::string> env_;
};

TEST_F(SrunTest, EachTaskOfTheStepKnowsItsRankItsNodeAndItsGpus) {
  std::string out, err;
  ASSERT_EQ(Srun({"-l", "--gpus-per-task", "1", "sh", "-c",
                  "echo proc $SLURM_PROCID local $SLURM_LOCALID node $SLURM_NODEID on "
                  "$SLURMD_NODENAME of $SLURM_NTASKS gpus $CUDA_VISIBLE_DEVICES job $SLURM_JOB_ID"},
                 &out, &err),
            0)
      << err;
  std::set<std::string> lines;
  for (const auto& line : Split(out, '\n')) {
    if (!line.empty()) lines.insert(line);
  }
  EXPECT_EQ(lines, (std::set<std::string>{
                       "0: proc 0 local 0 node 0 on gpu1 of 4 gpus 0 job 77",
                       "1: proc 1 local 1 node 0 on gpu1 of 4 gpus 1 job 77",
                       "2: proc 2 local 0 node 1 on gpu2 of 4 gpus 2 job 77",
                       "3: proc 3 local 1 node 1 on gpu2 of 4 gpus 3 job 77",
                   }));
}

TEST_F(SrunTest, TasksSpreadAsSlurmsBlockDistributionAndTheWorstStatusIsSrunsOwn) {
  std::string out, err;
  // Three tasks on two nodes: two on the first, one on the second.
  ASSERT_EQ(Srun({"-n", "3", "sh", "-c", "echo $SLURMD_NODENAME $SLURM_STEP_TASKS_PER_NODE"}, &out),
            0);
  std::multiset<std::string> lines;
  for (const auto& line : Split(out, '\n')) {
    if (!line.empty()) lines.insert(line);
  }
  EXPECT_EQ(lines, (std::multiset<std::string>{"gpu1 2,1", "gpu1 2,1", "gpu2 2,1"}));
  // One node; words with spaces and quotes reach the task as they were given.
  ASSERT_EQ(Srun({"-N", "1", "--ntasks-per-node", "1", "printf", "%s|", "two words", "it's"}, &out),
            0);
  EXPECT_EQ(out, "two words|it's|\n");
  // A task that fails: srun says which, and its status is the worst.
  EXPECT_EQ(Srun({"sh", "-c", "exit $SLURM_PROCID"}, &out, &err), 3);
  EXPECT_THAT(err, HasSubstr("srun: error: gpu2: task 3: Exited with exit code 3"));
}

TEST_F(SrunTest, WithKillOnBadExitTheFirstFailureEndsTheOtherTasks) {
  std::string out, err;
  auto started = std::chrono::steady_clock::now();
  // Task 0 fails at once; the others would sleep for a minute, each leaving its pid behind.
  EXPECT_EQ(Srun({"-K", "sh", "-c",
                  "if [ $SLURM_PROCID = 0 ]; then exit 3; fi; echo $$ > " + dir_.string() +
                      "/pid.$SLURM_PROCID; exec sleep 60"},
                 &out, &err),
            3);
  EXPECT_LT(std::chrono::steady_clock::now() - started, std::chrono::seconds(30));
  EXPECT_THAT(err, HasSubstr("srun: error: gpu1: task 0: Exited with exit code 3"));
  EXPECT_THAT(err, HasSubstr("ended: another task failed (--kill-on-bad-exit)"));
  for (int task = 1; task < 4; ++task) {
    pid_t pid = ReadPidFile((dir_ / ("pid." + std::to_string(task))).string());
    if (pid <= 0) continue;  // ended before it started its sleep
    bool gone = false;
    for (int i = 0; i < 400 && !gone; ++i) {
      gone = ::kill(pid, 0) != 0;
      if (!gone) std::this_thread::sleep_for(std::chrono::milliseconds(25));
    }
    EXPECT_TRUE(gone) << "task " << task << " still sleeps";
  }
}

TEST_F(SrunTest, OutsideAJobOrWithAnUnknownOptionItSaysWhy) {
  std::string out, err;
  EXPECT_EQ(Srun({"--mpi=pmix", "hostname"}, &out, &err), 1);
  EXPECT_THAT(err, HasSubstr("unknown option \"--mpi=pmix\""));
  EXPECT_EQ(Srun({"-N", "3", "hostname"}, &out, &err), 1);
  EXPECT_THAT(err, HasSubstr("-N 3: the job has 2 nodes"));
  env_.erase("SLURM_JOB_NODELIST");
  EXPECT_EQ(Srun({"hostname"}, &out, &err), 1);
  EXPECT_THAT(err, HasSubstr("not inside a Cohort Slurm job"));
}

TEST_F(SrunTest, ScontrolExpandsAndCompressesHostlists) {
  std::string out, err;
  ASSERT_EQ(Srun({"show", "hostnames"}, &out, &err, "scontrol"), 0) << err;
  EXPECT_EQ(out, "gpu1\ngpu2\n");
  ASSERT_EQ(Srun({"show", "hostnames", "n[08-10],login"}, &out, &err, "scontrol"), 0);
  EXPECT_EQ(out, "n08\nn09\nn10\nlogin\n");
  ASSERT_EQ(Srun({"show", "hostlist", "n1,n2,n3"}, &out, &err, "scontrol"), 0);
  EXPECT_EQ(out, "n[1-3]\n");
  EXPECT_EQ(Srun({"show", "jobs"}, &out, &err, "scontrol"), 1);
  EXPECT_THAT(err, HasSubstr("`show hostnames [LIST]` and `show hostlist LIST` only"));
}

// What the batch script exports reaches every task (Slurm's --export=ALL), but not what is the
// node's; a signal to srun reaches every task, which srun then waits for.
TEST_F(SrunTest, TasksGetTheScriptsVariablesAndTheSignalsSrunGets) {
  const std::string dir = dir_.string();
  env_["MASTER_ADDR"] = "gpu1";
  env_["SLURMD_NODENAME"] = "login";  // the batch host's: each task gets its own node's
  std::ofstream(dir_ / "signal.sh")
      << "\"$@\" > " << dir << "/out 2> " << dir << "/err &\n"
      << "srun=$!\n"
      << "while [ $(ls " << dir << "/ready.* 2>/dev/null | wc -l) -lt 4 ]; do sleep 0.05; done\n"
      << "kill -USR1 $srun\n"
      << "wait $srun\n";
  SpawnOptions options;
  options.env = env_;
  int status = RunToCompletion(
      {"/bin/sh", (dir_ / "signal.sh").string(), ToolsDir() + "/slurm/srun", "-l", "sh", "-c",
       fmt::format("trap 'echo got USR1 with $MASTER_ADDR on $SLURMD_NODENAME; exit 0' USR1; "
                   "touch {}/ready.$SLURM_PROCID; while :; do sleep 0.05; done",
                   dir)},
      options);
  std::string out = Slurp((dir_ / "out").string());
  EXPECT_EQ(status, 0) << out << Slurp((dir_ / "err").string());
  for (const char* line : {"0: got USR1 with gpu1 on gpu1", "1: got USR1 with gpu1 on gpu1",
                           "2: got USR1 with gpu1 on gpu2", "3: got USR1 with gpu1 on gpu2"}) {
    EXPECT_THAT(out, HasSubstr(line));
  }
  EXPECT_THAT(Slurp((dir_ / "gpu2.log").string()), HasSubstr("sends signal 10"));
}

}  // namespace
}  // namespace cohort::exec
