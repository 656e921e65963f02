// `cohortd run-task` as a root agent starts it: the supervisor stays root, the command becomes
// the task's account. Run in a forked child of the test, on a real task directory; needs root.
#include "agent/task_supervisor.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>

#include "agent/task_memory.h"
#include "model/json.h"
#include "os/durable_file.h"
#include "os/process.h"

namespace cohort::agent {
namespace {

namespace fs = std::filesystem;

constexpr uid_t kNobody = 65534;

class TaskSupervisorTest : public ::testing::Test {
 protected:
  TaskSupervisorTest()
      : dir_(fs::temp_directory_path() /
             ("cohort-supervisor-test-" + std::to_string(::getpid()) + "-" +
              ::testing::UnitTest::GetInstance()->current_test_info()->name())) {
    fs::remove_all(dir_);
    fs::create_directories(dir_);
    fs::permissions(dir_, static_cast<fs::perms>(0711));  // as the agent makes it
  }
  ~TaskSupervisorTest() override { fs::remove_all(dir_); }

  void SetUp() override {
    if (::geteuid() != 0) GTEST_SKIP() << "running a task as another account needs root";
  }

  // Writes spec.json for a task of nobody and runs its supervisor to the end; returns the
  // supervisor's exit status.
  int Run(const std::string& script, const std::string& workdir = "",
          std::vector<std::string> job_dirs = {}, Json memory = nullptr) {
    return RunCommand({"/bin/sh", "-c", script}, workdir, std::move(job_dirs), std::move(memory));
  }
  int RunCommand(const std::vector<std::string>& command, const std::string& workdir = "",
                 std::vector<std::string> job_dirs = {}, Json memory = nullptr) {
    Json spec{{"command", command},      {"env", {{"LC_ALL", "C"}}}, {"workdir", workdir},
              {"grace_period_ms", 1000}, {"uid", kNobody},           {"gid", kNobody},
              {"user", "nobody"},        {"home", "/nonexistent"},   {"job_dirs", job_dirs}};
    if (!memory.is_null()) spec["memory"] = memory;
    EXPECT_TRUE(WriteFileAtomically(dir_ / "spec.json", spec.dump(), 0600).ok());
    pid_t pid = ::fork();
    if (pid == 0) _exit(RunTaskSupervisor(dir_));
    int status = 0;
    ::waitpid(pid, &status, 0);
    return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  }

  std::string Output() { return ReadFileOrEmpty(dir_ / "output.log"); }
  struct stat Stat(const fs::path& p) {
    struct stat st {};
    EXPECT_EQ(::lstat(p.c_str(), &st), 0) << p;
    return st;
  }

  fs::path dir_;
};

TEST_F(TaskSupervisorTest, TheCommandRunsAsTheAccountWithNothingElse) {
  ASSERT_EQ(Run("echo \"ids $(id -u) $(id -g) $(id -G)\"; grep NoNewPrivs /proc/self/status; "
                "grep CapEff /proc/self/status; echo \"env $HOME $USER $LOGNAME\"; "
                "echo \"cwd $(pwd)\"; touch mine && echo wrote; "
                "stat -c 'work %u %a' ../..; stat -c 'data %u %a' ..; "
                "stat -c 'output.log %u %a' ../../../output.log; "
                "cat ../../../spec.json >/dev/null 2>&1 || echo 'spec.json: denied'; "
                "ls ../../.. >/dev/null 2>&1 || echo 'task directory: denied'",
                "data/run"),
            0);
  EXPECT_EQ(Output(),
            "ids 65534 65534 65534\n"
            "NoNewPrivs:\t1\n"
            "CapEff:\t0000000000000000\n"
            "env /nonexistent nobody nobody\n"
            "cwd " +
                (dir_ / "work/data/run").string() +
                "\n"
                "wrote\n"
                "work 65534 700\n"
                "data 65534 755\n"
                "output.log 65534 600\n"
                "spec.json: denied\n"
                "task directory: denied\n");
  auto exit = ReadTaskExit(dir_);
  ASSERT_TRUE(exit.ok());
  EXPECT_EQ(exit->exit_code, 0);
  EXPECT_EQ(exit->message, "") << "it ran";
  // Once the task is over, its scratch directory is emptied and taken back: the agent deletes
  // nothing as root that the account could still change. The rest was root's all along.
  EXPECT_TRUE(fs::is_empty(dir_ / "work"));
  for (const auto& [path, uid, mode] :
       {std::tuple{dir_ / "work", 0u, 0700u}, std::tuple{dir_ / "output.log", kNobody, 0600u},
        std::tuple{dir_ / "task.pid", 0u, 0600u}, std::tuple{dir_ / "exit.json", 0u, 0600u}}) {
    EXPECT_EQ(Stat(path).st_uid, uid) << path;
    EXPECT_EQ(Stat(path).st_mode & 07777, mode) << path;
  }
}

TEST_F(TaskSupervisorTest, AWorkdirTheAccountCannotEnterFailsClearly) {
  EXPECT_EQ(Run("echo never", "/root"), 0);
  EXPECT_EQ(Output(), "cohort: cannot enter the working directory /root: Permission denied\n");
  EXPECT_EQ(ReadTaskExit(dir_)->exit_code, 126);
  EXPECT_EQ(ReadTaskExit(dir_)->message,
            "cannot enter the working directory /root: Permission denied")
      << "the reason reaches the task's report";
  EXPECT_EQ(ReadTaskExit(dir_)->start_failure, std::nullopt)
      << "not a missing workdir: only missing ones are classified";
}

// Start failures (docs/reliability.md, "Tasks that cannot start"): what no retry fixes is named
// in exit.json, for the master to end the job at once.
TEST_F(TaskSupervisorTest, AProgramNotOnThePathIsAStartFailure) {
  EXPECT_EQ(RunCommand({"cohort-no-such-program", "--flag"}), 0);
  auto exit = ReadTaskExit(dir_);
  ASSERT_TRUE(exit.ok());
  EXPECT_EQ(exit->exit_code, 127);
  EXPECT_EQ(exit->start_failure, StartFailure::kProgram);
  EXPECT_EQ(exit->message,
            "program \"cohort-no-such-program\" not found on the task's PATH "
            "(/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin)");
  EXPECT_EQ(Output(), "cohort: " + exit->message + "\n");
}

TEST_F(TaskSupervisorTest, AProgramPathThatDoesNotExistIsAStartFailure) {
  EXPECT_EQ(RunCommand({"/opt/cohort-none/train"}), 0);
  auto exit = ReadTaskExit(dir_);
  ASSERT_TRUE(exit.ok());
  EXPECT_EQ(exit->start_failure, StartFailure::kProgram);
  EXPECT_THAT(exit->message, ::testing::HasSubstr("\"/opt/cohort-none/train\" does not exist"));
}

TEST_F(TaskSupervisorTest, AProgramTheAccountCannotExecuteIsAStartFailure) {
  fs::path program = dir_ / "train.sh";
  ASSERT_TRUE(WriteFileAtomically(program, "#!/bin/sh\necho ran\n", 0644).ok());
  EXPECT_EQ(RunCommand({program.string()}), 0);
  auto exit = ReadTaskExit(dir_);
  ASSERT_TRUE(exit.ok());
  EXPECT_EQ(exit->exit_code, 126);
  EXPECT_EQ(exit->start_failure, StartFailure::kProgram);
  EXPECT_EQ(exit->message,
            "program \"" + program.string() + "\" is not executable by nobody: Permission denied");
}

TEST_F(TaskSupervisorTest, AMissingWorkdirIsAStartFailure) {
  EXPECT_EQ(Run("echo never", "/nonexistent/cohort-workdir"), 0);
  auto exit = ReadTaskExit(dir_);
  ASSERT_TRUE(exit.ok());
  EXPECT_EQ(exit->exit_code, 126);
  EXPECT_EQ(exit->start_failure, StartFailure::kWorkdir);
  EXPECT_EQ(exit->message,
            "cannot enter the working directory /nonexistent/cohort-workdir: No such file or "
            "directory");
}

TEST_F(TaskSupervisorTest, ACommandThatRanAndExitedWith127IsNotAStartFailure) {
  EXPECT_EQ(Run("exit 127"), 0);
  auto exit = ReadTaskExit(dir_);
  ASSERT_TRUE(exit.ok());
  EXPECT_EQ(exit->exit_code, 127);
  EXPECT_EQ(exit->start_failure, std::nullopt);
  EXPECT_EQ(exit->message, "");
}

// docs/job-spec.md, "The task's environment": the base and the master's variables, never the
// supervisor's (the agent's) own.
TEST_F(TaskSupervisorTest, TheTaskGetsTheBaseEnvironmentAndNotTheAgents) {
  ::setenv("COHORT_SUPERVISOR_TEST_MARKER", "leaked", 1);
  ::setenv("AWS_SECRET_ACCESS_KEY", "leaked-secret", 1);
  ::setenv("TZ", "Europe/Paris", 1);
  int status = Run("env | sort");
  ::unsetenv("COHORT_SUPERVISOR_TEST_MARKER");
  ::unsetenv("AWS_SECRET_ACCESS_KEY");
  ::unsetenv("TZ");
  ASSERT_EQ(status, 0);
  std::string env = Output();
  EXPECT_THAT(env, ::testing::Not(::testing::HasSubstr("leaked")));
  EXPECT_THAT(env, ::testing::HasSubstr(
                       "PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin\n"));
  EXPECT_THAT(env, ::testing::HasSubstr("HOME=/nonexistent\n"));
  EXPECT_THAT(env, ::testing::HasSubstr("USER=nobody\n"));
  EXPECT_THAT(env, ::testing::HasSubstr("LOGNAME=nobody\n"));
  EXPECT_THAT(env, ::testing::HasSubstr("SHELL=/bin/sh\n")) << "spec.json names no shell";
  EXPECT_THAT(env, ::testing::HasSubstr("LANG=C.UTF-8\n"));
  EXPECT_THAT(env, ::testing::HasSubstr("TZ=Europe/Paris\n")) << "the agent's time zone";
  EXPECT_THAT(env, ::testing::HasSubstr("LC_ALL=C\n")) << "the spec's";
}

TEST_F(TaskSupervisorTest, AJobDirectoryTheAccountCannotUseFailsClearly) {
  fs::path hidden = dir_ / "private" / "jobs" / "7" / "checkpoints";
  fs::create_directories(hidden);
  fs::permissions(dir_ / "private", static_cast<fs::perms>(0700));
  EXPECT_EQ(Run("echo never", "", {hidden.string()}), 0);
  EXPECT_EQ(Output(), "cohort: nobody cannot use the job's directory " + hidden.string() +
                          " (every directory above it must be searchable by the account): "
                          "Permission denied\n");
  EXPECT_EQ(ReadTaskExit(dir_)->exit_code, 126);
  EXPECT_THAT(ReadTaskExit(dir_)->message, ::testing::StartsWith("nobody cannot use"));
}

// Where this machine enforces memory requests (root, a memory controller: os/memory_cgroup.h).
TEST_F(TaskSupervisorTest, ATaskPastItsMemoryLimitIsKilledAndItsExitSaysWhy) {
  auto cgroups = MemoryCgroups::Find();
  if (!cgroups.ok()) GTEST_SKIP() << "not enforced here: " << cgroups.status().message();
  const Json limit =
      TaskMemoryJson(TaskMemorySpec{int64_t{64} << 20, cgroups->version(), cgroups->parent()});
  EXPECT_EQ(
      Run("exec python3 -c 'b = bytearray(300 << 20); print(\"touched\", len(b))'", "", {}, limit),
      0);
  auto exit = ReadTaskExit(dir_);
  ASSERT_TRUE(exit.ok());
  EXPECT_EQ(exit->signal, SIGKILL);
  EXPECT_EQ(exit->message,
            "exceeded its memory limit of 64 MiB (the task's memory request); killed by the "
            "kernel's OOM killer");
  EXPECT_THAT(Output(), ::testing::Not(::testing::HasSubstr("touched")));
  EXPECT_THAT(Output(), ::testing::HasSubstr("cohort: exceeded its memory limit of 64 MiB"));
  // The group went with the task.
  const std::string prefix = dir_.filename().string() + "-";
  for (const auto& entry : fs::directory_iterator(cgroups->parent())) {
    EXPECT_FALSE(entry.path().filename().string().starts_with(prefix)) << entry.path();
  }

  // Under the limit: nothing to say.
  fs::remove(dir_ / "exit.json");
  EXPECT_EQ(
      Run("exec python3 -c 'b = bytearray(16 << 20); print(\"touched\", len(b))'", "", {}, limit),
      0);
  EXPECT_EQ(ReadTaskExit(dir_)->exit_code, 0);
  EXPECT_EQ(ReadTaskExit(dir_)->message, "");
  EXPECT_THAT(Output(), ::testing::HasSubstr("touched 16777216"));
}

}  // namespace
}  // namespace cohort::agent
