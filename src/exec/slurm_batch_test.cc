// `cohort-exec batch`: the variables it reads, the "#!" line as the kernel reads it, and the real
// binary running real scripts, its own stdout and stderr standing for the task's log.
#include "exec/slurm_batch.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <thread>

#include "exec/exec_test_support.h"
#include "os/process.h"

namespace cohort::exec {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::IsEmpty;
using ::testing::Not;

using testing::Slurp;

TEST(BatchSettingsTest, ReadsTheVariablesCohortSets) {
  auto settings = BatchSettingsFromEnv({{"COHORT_SLURM_SCRIPT", "/var/spool/job1/script"},
                                        {"COHORT_SLURM_OUTPUT", "slurm-1.out"},
                                        {"COHORT_SLURM_ERROR", "slurm-1.err"},
                                        {"COHORT_SLURM_INPUT", "in.txt"},
                                        {"COHORT_SLURM_OPEN_MODE", "append"},
                                        {"COHORT_SLURM_SIGNAL", "B:10@30"},
                                        {"PATH", "/usr/bin"}});
  ASSERT_TRUE(settings.ok()) << settings.status().ToString();
  EXPECT_EQ(settings->script, "/var/spool/job1/script");
  EXPECT_EQ(settings->output, "slurm-1.out");
  EXPECT_EQ(settings->error, "slurm-1.err");
  EXPECT_EQ(settings->input, "in.txt");
  EXPECT_TRUE(settings->append);
  ASSERT_TRUE(settings->signal.has_value());
  EXPECT_EQ(settings->signal->number, 10);
  EXPECT_EQ(settings->signal->seconds, 30);
  EXPECT_TRUE(settings->signal->script_only);
}

TEST(BatchSettingsTest, OnlyTheScriptAndTheOutputAreRequired) {
  auto settings = BatchSettingsFromEnv({{"COHORT_SLURM_SCRIPT", "s"},
                                        {"COHORT_SLURM_OUTPUT", "o"},
                                        {"COHORT_SLURM_ERROR", ""},
                                        {"COHORT_SLURM_OPEN_MODE", "truncate"}});
  ASSERT_TRUE(settings.ok()) << settings.status().ToString();
  EXPECT_THAT(settings->error, IsEmpty());
  EXPECT_THAT(settings->input, IsEmpty());
  EXPECT_FALSE(settings->append);
  EXPECT_FALSE(settings->signal.has_value());
  EXPECT_FALSE(
      BatchSettingsFromEnv({{"COHORT_SLURM_SCRIPT", "s"}, {"COHORT_SLURM_OUTPUT", "o"}})->append);
}

TEST(BatchSettingsTest, AMissingOrMalformedVariableIsNamed) {
  auto message = [](std::map<std::string, std::string> env) {
    env.emplace("COHORT_SLURM_SCRIPT", "s");
    env.emplace("COHORT_SLURM_OUTPUT", "o");
    auto settings = BatchSettingsFromEnv(env);
    return settings.ok() ? std::string("ok") : settings.status().message();
  };
  EXPECT_THAT(message({{"COHORT_SLURM_SCRIPT", ""}}), HasSubstr("COHORT_SLURM_SCRIPT is not set"));
  EXPECT_THAT(BatchSettingsFromEnv({{"COHORT_SLURM_SCRIPT", "s"}}).status().message(),
              HasSubstr("COHORT_SLURM_OUTPUT is not set"));
  EXPECT_THAT(message({{"COHORT_SLURM_OPEN_MODE", "overwrite"}}),
              HasSubstr("COHORT_SLURM_OPEN_MODE: \"overwrite\""));
  for (const char* bad : {"10", "B:10", "@5", "B:@5", "USR1@5", "0@5", "10@-1", "10@5s", "b:10@5",
                          "R:10@5", "10@", " 10@5", "99999@5"}) {
    EXPECT_THAT(message({{"COHORT_SLURM_SIGNAL", bad}}), HasSubstr("COHORT_SLURM_SIGNAL")) << bad;
  }
  EXPECT_EQ(message({{"COHORT_SLURM_SIGNAL", "15@0"}}), "ok");
  auto group = ParseBatchSignal("15@0");
  ASSERT_TRUE(group.ok());
  EXPECT_FALSE(group->script_only);
  EXPECT_EQ(group->number, 15);
  EXPECT_EQ(group->seconds, 0);
}

TEST(ScriptCommandTest, RunsTheInterpreterAsTheKernelDoes) {
  auto argv = [](std::string_view line, std::vector<std::string> args = {}) {
    auto words = ScriptCommand(line, "/spool/script", args);
    return words.ok() ? *words : std::vector<std::string>{"error: " + words.status().message()};
  };
  EXPECT_THAT(argv("#!/bin/sh"), ElementsAre("/bin/sh", "/spool/script"));
  EXPECT_THAT(argv("#!/bin/bash", {"a b", "-c"}),
              ElementsAre("/bin/bash", "/spool/script", "a b", "-c"));
  // The rest of the line is one argument, however many words it holds, trimmed.
  EXPECT_THAT(argv("#! \t/bin/bash  -l -x \t"), ElementsAre("/bin/bash", "-l -x", "/spool/script"));
  EXPECT_THAT(argv("#!/usr/bin/env python3"),
              ElementsAre("/usr/bin/env", "python3", "/spool/script"));
  // As written: a relative interpreter is the kernel's to refuse, not searched for.
  EXPECT_THAT(argv("#!bash"), ElementsAre("bash", "/spool/script"));
}

TEST(ScriptCommandTest, RefusesAScriptWithoutAHashBangLine) {
  for (std::string_view line : {"", "echo hello", " #!/bin/sh", "#/bin/sh"}) {
    auto words = ScriptCommand(line, "/spool/script", {});
    ASSERT_FALSE(words.ok()) << line;
    EXPECT_THAT(words.status().message(), HasSubstr("/spool/script is not a batch script"));
    EXPECT_THAT(words.status().message(), HasSubstr("\"#!\" line"));
  }
  for (std::string_view line : {"#!", "#!  \t "}) {
    EXPECT_THAT(ScriptCommand(line, "s", {}).status().message(), HasSubstr("names no interpreter"));
  }
}

// The exit status of `pid`, waiting at most `limit`; -1 (and the process killed) past it.
int WaitFor(pid_t pid, std::chrono::milliseconds limit = std::chrono::seconds(5)) {
  auto deadline = std::chrono::steady_clock::now() + limit;
  int status;
  while (::waitpid(pid, &status, WNOHANG) == 0) {
    if (std::chrono::steady_clock::now() > deadline) {
      ::kill(pid, SIGKILL);
      ::waitpid(pid, &status, 0);
      return -1;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

bool WaitForFile(const std::filesystem::path& path) {
  for (int i = 0; i < 400 && !std::filesystem::exists(path); ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  return std::filesystem::exists(path);
}

class SlurmBatchTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = std::filesystem::temp_directory_path() /
           ("slurm_batch_test_" + std::to_string(::getpid()) + "_" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    std::filesystem::create_directories(dir_);
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }

  // The script, written as the agent writes it: 0644, not executable.
  std::string Script(const std::string& text) {
    std::string path = (dir_ / "script").string();
    std::ofstream(path) << text;
    ::chmod(path.c_str(), 0644);
    return path;
  }

  // `cohort-exec batch -- ARGS` in dir_ with these variables (COHORT_SLURM_SCRIPT is the script
  // Script wrote), its stdout and stderr (the task's log) apart in log.out and log.err.
  std::vector<std::string> Command(const std::vector<std::string>& args = {}) {
    std::vector<std::string> argv = {
        "/bin/sh",
        "-c",
        "cd \"$COHORT_TEST_DIR\" && exec \"$0\" \"$@\" >log.out 2>log.err",
        COHORT_EXEC_PATH,
        "batch",
        "--"};
    argv.insert(argv.end(), args.begin(), args.end());
    return argv;
  }
  SpawnOptions Options(std::map<std::string, std::string> env) {
    SpawnOptions options;
    options.env = std::move(env);
    options.env.emplace("COHORT_TEST_DIR", dir_.string());
    options.env.emplace("COHORT_SLURM_SCRIPT", (dir_ / "script").string());
    for (const char* name : {"COHORT_SLURM_OUTPUT", "COHORT_SLURM_ERROR", "COHORT_SLURM_INPUT",
                             "COHORT_SLURM_OPEN_MODE", "COHORT_SLURM_SIGNAL"}) {
      options.env.emplace(name, "");  // none of the test's own environment
    }
    return options;
  }
  int Run(std::map<std::string, std::string> env, const std::vector<std::string>& args = {}) {
    return RunToCompletion(Command(args), Options(std::move(env)));
  }
  std::string LogOut() { return Slurp((dir_ / "log.out").string()); }
  std::string LogErr() { return Slurp((dir_ / "log.err").string()); }
  std::string File(const std::string& name) { return Slurp((dir_ / name).string()); }

  std::filesystem::path dir_;
};

TEST_F(SlurmBatchTest, OutputGoesToTheFileAndTheLogAndTheStatusComesBack) {
  Script("#!/bin/sh\necho to stdout\necho to stderr >&2\nexit 3\n");
  EXPECT_EQ(Run({{"COHORT_SLURM_OUTPUT", "slurm-1.out"}}), 3);
  // Relative to the current directory; standard error into the output file too.
  EXPECT_EQ(File("slurm-1.out"), "to stdout\nto stderr\n");
  EXPECT_EQ(LogOut(), "to stdout\n");
  EXPECT_THAT(LogErr(), HasSubstr("to stderr\n"));
  EXPECT_THAT(LogErr(), HasSubstr("cohort-exec batch: running " + (dir_ / "script").string() +
                                  "; output to slurm-1.out\n"));
  EXPECT_THAT(LogErr(), Not(HasSubstr("errors to")));
  struct stat st {};
  ASSERT_EQ(::stat((dir_ / "slurm-1.out").c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0600, 0600);
  EXPECT_EQ(st.st_mode & 0111, 0);
}

TEST_F(SlurmBatchTest, ErrorsGoToTheirOwnFileWhenGiven) {
  Script("#!/bin/sh\necho out\necho err >&2\n");
  EXPECT_EQ(Run({{"COHORT_SLURM_OUTPUT", "o.txt"}, {"COHORT_SLURM_ERROR", "e.txt"}}), 0);
  EXPECT_EQ(File("o.txt"), "out\n");
  EXPECT_EQ(File("e.txt"), "err\n");
  EXPECT_THAT(LogErr(), HasSubstr("; output to o.txt, errors to e.txt\n"));
  // The same file under two names is one output file.
  EXPECT_EQ(Run({{"COHORT_SLURM_OUTPUT", "same.txt"},
                 {"COHORT_SLURM_ERROR", (dir_ / "same.txt").string()}}),
            0);
  EXPECT_EQ(File("same.txt"), "out\nerr\n");
}

TEST_F(SlurmBatchTest, TheOpenModeAppendsOrTruncates) {
  Script("#!/bin/sh\necho new\n");
  std::ofstream(dir_ / "o.txt") << "old\n";
  EXPECT_EQ(Run({{"COHORT_SLURM_OUTPUT", "o.txt"}, {"COHORT_SLURM_OPEN_MODE", "append"}}), 0);
  EXPECT_EQ(File("o.txt"), "old\nnew\n");
  EXPECT_EQ(Run({{"COHORT_SLURM_OUTPUT", "o.txt"}, {"COHORT_SLURM_OPEN_MODE", "truncate"}}), 0);
  EXPECT_EQ(File("o.txt"), "new\n");
  std::ofstream(dir_ / "o.txt") << "old\n";
  EXPECT_EQ(Run({{"COHORT_SLURM_OUTPUT", "o.txt"}}), 0);
  EXPECT_EQ(File("o.txt"), "new\n") << "truncate is the default";
}

TEST_F(SlurmBatchTest, ArgumentsAndInputReachTheScript) {
  Script("#!/bin/sh\necho \"[$1] [$2] $#\"\ncat\n");
  std::ofstream(dir_ / "in.txt") << "from input\n";
  EXPECT_EQ(Run({{"COHORT_SLURM_OUTPUT", "o.txt"}, {"COHORT_SLURM_INPUT", "in.txt"}},
                {"one two", "--three"}),
            0);
  EXPECT_EQ(File("o.txt"), "[one two] [--three] 2\nfrom input\n");
  // No input: /dev/null, not the wrapper's own.
  EXPECT_EQ(Run({{"COHORT_SLURM_OUTPUT", "o.txt"}}), 0);
  EXPECT_EQ(File("o.txt"), "[] [] 0\n");
}

TEST_F(SlurmBatchTest, TheHashBangLineMayGiveTheInterpreterAnArgument) {
  Script("#!/bin/sh -e\necho before\nfalse\necho not reached\n");
  EXPECT_EQ(Run({{"COHORT_SLURM_OUTPUT", "o.txt"}}), 1);
  EXPECT_EQ(File("o.txt"), "before\n");
}

TEST_F(SlurmBatchTest, AScriptWithoutAHashBangLineIsRefused) {
  Script("echo hello > ran\n");
  EXPECT_EQ(Run({{"COHORT_SLURM_OUTPUT", "o.txt"}}), 1);
  EXPECT_THAT(LogErr(), HasSubstr("cohort-exec batch: " + (dir_ / "script").string() +
                                  " is not a batch script: its first line must be a \"#!\" line"));
  EXPECT_FALSE(std::filesystem::exists(dir_ / "ran"));
  EXPECT_FALSE(std::filesystem::exists(dir_ / "o.txt"));
}

TEST_F(SlurmBatchTest, AnInterpreterThatCannotRunIsReported) {
  Script("#!bash\necho hello\n");
  EXPECT_EQ(Run({{"COHORT_SLURM_OUTPUT", "o.txt"}}), 127);
  EXPECT_THAT(File("o.txt"), HasSubstr("cannot run bash, the interpreter that the \"#!\" line of"));
  EXPECT_THAT(LogErr(), HasSubstr("cannot run bash"));
}

TEST_F(SlurmBatchTest, AFileThatCannotBeOpenedStopsItBeforeTheScriptRuns) {
  Script("#!/bin/sh\ntouch \"$COHORT_TEST_DIR/ran\"\n");
  EXPECT_EQ(Run({{"COHORT_SLURM_OUTPUT", "no/such/dir/o.txt"}}), 1);
  EXPECT_THAT(LogErr(), HasSubstr("cohort-exec batch: cannot open --output file "
                                  "no/such/dir/o.txt: No such file or directory"));
  EXPECT_EQ(Run({{"COHORT_SLURM_OUTPUT", "o.txt"}, {"COHORT_SLURM_ERROR", "no/e.txt"}}), 1);
  EXPECT_THAT(LogErr(), HasSubstr("cannot open --error file no/e.txt"));
  EXPECT_EQ(Run({{"COHORT_SLURM_OUTPUT", "o.txt"}, {"COHORT_SLURM_INPUT", "missing.txt"}}), 1);
  EXPECT_THAT(LogErr(), HasSubstr("cannot open --input file missing.txt"));
  EXPECT_FALSE(std::filesystem::exists(dir_ / "ran"));
  EXPECT_EQ(Run({{"COHORT_SLURM_OUTPUT", ""}}), 1);
  EXPECT_THAT(LogErr(), HasSubstr("COHORT_SLURM_OUTPUT is not set"));
  EXPECT_EQ(Run({{"COHORT_SLURM_OUTPUT", "o.txt"}, {"COHORT_SLURM_SIGNAL", "B:USR1@5"}}), 1);
  EXPECT_THAT(LogErr(), HasSubstr("COHORT_SLURM_SIGNAL: \"B:USR1@5\""));
  EXPECT_FALSE(std::filesystem::exists(dir_ / "ran"));
}

TEST_F(SlurmBatchTest, AFileThatCannotBeWrittenLeavesTheLogAndTheStatus) {
  Script("#!/bin/sh\necho one\necho two >&2\nexit 5\n");
  EXPECT_EQ(Run({{"COHORT_SLURM_OUTPUT", "/dev/full"}}), 5);
  EXPECT_EQ(LogOut(), "one\n");
  EXPECT_THAT(LogErr(), HasSubstr("two\n"));
  const std::string said = "cannot write to --output file /dev/full: No space left on device";
  EXPECT_THAT(LogErr(), HasSubstr(said));
  EXPECT_EQ(LogErr().find(said), LogErr().rfind(said)) << "said once";
}

TEST_F(SlurmBatchTest, ALogThatIsGoneDoesNotEndTheWrapper) {
  Script("#!/bin/sh\nsleep 0.2\necho one\necho two\nexit 6\n");
  // Its stdout a pipe that nobody reads any more: writes to it fail with EPIPE.
  std::vector<std::string> argv = {
      "/bin/sh", "-c",
      "cd \"$COHORT_TEST_DIR\" && { \"$0\" batch 2>log.err; echo $? >status; } | true",
      COHORT_EXEC_PATH};
  EXPECT_EQ(RunToCompletion(argv, Options({{"COHORT_SLURM_OUTPUT", "o.txt"}})), 0);
  EXPECT_EQ(File("o.txt"), "one\ntwo\n");
  EXPECT_EQ(File("status"), "6\n");
}

TEST_F(SlurmBatchTest, SignalBReachesTheScriptAlone) {
  Script(
      "#!/bin/sh\n"
      "(trap 'echo child got USR1; exit 0' USR1; while :; do sleep 0.05; done) &\n"
      "bg=$!\n"
      "trap 'echo script got USR1; kill $bg; exit 7' USR1\n"
      "while :; do sleep 0.05; done\n");
  EXPECT_EQ(Run({{"COHORT_SLURM_OUTPUT", "o.txt"}, {"COHORT_SLURM_SIGNAL", "B:10@1"}}), 7);
  EXPECT_EQ(File("o.txt"), "script got USR1\n");
  EXPECT_THAT(LogErr(), HasSubstr("sending signal 10 to the script (--signal=B:...)"));
}

// Without B:, as in Slurm, the signal goes to the job's steps (the script's srun commands, which
// pass it on to their tasks), not to the batch shell.
TEST_F(SlurmBatchTest, SignalWithoutBReachesTheScriptsStepsAndNotTheScript) {
  // A stand-in for srun: a shell run under that name, as a script runs srun.
  std::filesystem::create_symlink("/bin/sh", dir_ / "srun");
  Script(
      "#!/bin/sh\n"
      "trap 'echo script got USR1' USR1\n"
      "\"$COHORT_TEST_DIR/srun\" -c \"trap 'echo step got USR1; exit 0' USR1; "
      "while :; do sleep 0.05; done\" &\n"
      "(trap 'echo other got USR1' USR1; sleep 2) &\n"
      "wait $!\n"
      "exit 7\n");
  EXPECT_EQ(Run({{"COHORT_SLURM_OUTPUT", "o.txt"}, {"COHORT_SLURM_SIGNAL", "10@1"}}), 7);
  EXPECT_THAT(File("o.txt"), HasSubstr("step got USR1\n"));
  EXPECT_THAT(File("o.txt"), Not(HasSubstr("script got USR1")));
  EXPECT_THAT(File("o.txt"), Not(HasSubstr("other got USR1"))) << "not a step: left alone";
  EXPECT_THAT(LogErr(), HasSubstr("sending signal 10 to the script's 1 running srun step"));
}

TEST_F(SlurmBatchTest, ASignalAtZeroSecondsIsSentAtOnce) {
  // exec: nothing else holds its output open, whether the signal finds sh or the sleep.
  Script("#!/bin/sh\nexec sleep 5\n");
  auto started = std::chrono::steady_clock::now();
  EXPECT_EQ(Run({{"COHORT_SLURM_OUTPUT", "o.txt"}, {"COHORT_SLURM_SIGNAL", "B:10@0"}}), 128 + 10);
  EXPECT_LT(std::chrono::steady_clock::now() - started, std::chrono::seconds(2));
}

TEST_F(SlurmBatchTest, SigtermToTheWrapperReachesTheScript) {
  Script(
      "#!/bin/sh\n"
      "trap 'echo got TERM; exit 9' TERM\n"
      "touch \"$COHORT_TEST_DIR/ready\"\n"
      "while :; do sleep 0.05; done\n");
  auto pid = Spawn(Command(), Options({{"COHORT_SLURM_OUTPUT", "o.txt"}}));
  ASSERT_TRUE(pid.ok()) << pid.status().ToString();
  ASSERT_TRUE(WaitForFile(dir_ / "ready"));
  ::kill(*pid, SIGTERM);
  EXPECT_EQ(WaitFor(*pid), 9);
  // (sh may also say that the sleep it waited for was "Terminated": the group got it too.)
  EXPECT_THAT(File("o.txt"), HasSubstr("got TERM\n"));

  // A script that does not catch it ends by it, and the wrapper says so.
  std::filesystem::remove(dir_ / "ready");
  Script("#!/bin/sh\ntouch \"$COHORT_TEST_DIR/ready\"\nsleep 5\n");
  pid = Spawn(Command(), Options({{"COHORT_SLURM_OUTPUT", "o.txt"}}));
  ASSERT_TRUE(pid.ok()) << pid.status().ToString();
  ASSERT_TRUE(WaitForFile(dir_ / "ready"));
  ::kill(*pid, SIGTERM);
  EXPECT_EQ(WaitFor(*pid), 128 + SIGTERM);
}

// In a child of the test, so that the wait for output that a background process holds can be
// cut short: its status; its log in log.out and log.err.
TEST_F(SlurmBatchTest, WhatTheScriptLeftRunningDoesNotHoldItsEnd) {
  Script("#!/bin/sh\nsleep 5 &\necho $! > \"$COHORT_TEST_DIR/bg\"\necho done\nexit 4\n");
  BatchSettings settings;
  settings.script = (dir_ / "script").string();
  settings.output = (dir_ / "o.txt").string();
  settings.drain_limit = std::chrono::milliseconds(300);
  ::setenv("COHORT_TEST_DIR", dir_.c_str(), 1);
  auto started = std::chrono::steady_clock::now();
  std::fflush(nullptr);  // nothing of the test's own output written twice
  pid_t child = ::fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    std::FILE* out = std::freopen((dir_ / "log.out").c_str(), "w", stdout);
    std::FILE* err = std::freopen((dir_ / "log.err").c_str(), "w", stderr);
    int status = out && err ? RunBatch(settings, {}) : 100;
    std::fflush(nullptr);  // stderr reopened on a file is buffered
    _exit(status);
  }
  EXPECT_EQ(WaitFor(child), 4);
  EXPECT_LT(std::chrono::steady_clock::now() - started, std::chrono::seconds(2));
  EXPECT_EQ(File("o.txt"), "done\n");
  EXPECT_THAT(LogErr(), HasSubstr("still hold its output open"));
  if (pid_t bg = ReadPidFile((dir_ / "bg").string()); bg > 0) ::kill(bg, SIGKILL);
}

}  // namespace
}  // namespace cohort::exec
