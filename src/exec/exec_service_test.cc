// The exec service and its client as mpirun uses them: real processes over a real socket.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <thread>

#include "exec/exec_request.h"
#include "exec/exec_service.h"
#include "exec/exec_session.h"
#include "exec/exec_test_support.h"
#include "os/process.h"
#include "testing/free_port.h"

namespace cohort::exec {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;
using ::testing::StartsWith;

constexpr const char* kCredential = "6a6f62206372656465";

using cohort::testing::FreePort;
using testing::Slurp;

bool Alive(pid_t pid) { return ::kill(pid, 0) == 0; }

class ExecServiceTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = std::filesystem::temp_directory_path() /
           ("exec_test_" + std::to_string(::getpid()) + "_" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    std::filesystem::create_directories(dir_);
  }
  void TearDown() override {
    for (pid_t pid : services_) {
      ::kill(pid, SIGTERM);
      int status;
      ::waitpid(pid, &status, 0);
    }
    std::filesystem::remove_all(dir_);
  }

  // A service on a port of its own, its output in `log`; the client's environment names it "w".
  int StartService(const std::string& log, std::vector<std::string> command = {},
                   const std::string& credential = kCredential,
                   std::map<std::string, std::string> env = {}) {
    int port = FreePort();
    std::vector<std::string> argv = {COHORT_EXEC_PATH, "serve", "--port", std::to_string(port)};
    if (!command.empty()) {
      argv.push_back("--");
      argv.insert(argv.end(), command.begin(), command.end());
    }
    SpawnOptions options;
    options.output = log;
    options.env = {{"COHORT_JOB_CREDENTIAL", credential}, {"TMPDIR", dir_.string()}};
    options.env.insert(env.begin(), env.end());
    auto pid = Spawn(argv, options);
    EXPECT_TRUE(pid.ok()) << pid.status().ToString();
    services_.push_back(*pid);
    WaitForListening(port);
    return port;
  }

  void WaitForListening(int port) {
    for (int i = 0; i < 200; ++i) {
      int fd = ::socket(AF_INET, SOCK_STREAM, 0);
      sockaddr_in addr{};
      addr.sin_family = AF_INET;
      addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
      addr.sin_port = htons(static_cast<uint16_t>(port));
      bool up = ::connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) == 0;
      ::close(fd);
      if (up) return;
      std::this_thread::sleep_for(std::chrono::milliseconds(25));
    }
    FAIL() << "nothing listens on " << port;
  }

  // Runs `cohort-exec w WORDS...` to completion: its exit status; its stderr in `err`.
  int Run(int port, std::vector<std::string> words, std::string* err = nullptr,
          const std::string& credential = kCredential) {
    std::vector<std::string> argv = {COHORT_EXEC_PATH, "cohort-job1-worker-9"};
    argv.insert(argv.end(), words.begin(), words.end());
    SpawnOptions options;
    options.output = (dir_ / "client.log").string();
    options.env = {{"COHORT_JOB_CREDENTIAL", credential},
                   {"COHORT_EXEC_ENDPOINTS",
                    "cohort-job1-worker-8=127.0.0.1:1,cohort-job1-worker-9=127.0.0.1:" +
                        std::to_string(port)}};
    std::filesystem::remove(options.output);
    int status = RunToCompletion(argv, options);
    if (err) *err = Slurp(options.output);
    return status;
  }

  std::filesystem::path dir_;
  std::vector<pid_t> services_;
};

TEST_F(ExecServiceTest, ACommandRunsInTheServingTaskAndItsStatusComesBack) {
  std::string log = (dir_ / "service.log").string();
  int port = StartService(log);
  EXPECT_EQ(Run(port, {"echo", "hello from", "$0"}), 0);
  EXPECT_EQ(Run(port, {"exit", "3"}), 3);
  EXPECT_EQ(Run(port, {"kill", "-9", "$$"}), 128 + 9);
  EXPECT_THAT(Slurp(log), HasSubstr("hello from sh\n")) << "its output is the serving task's";
  EXPECT_THAT(Slurp(log), HasSubstr("running for 127.0.0.1:"));
}

TEST_F(ExecServiceTest, OnlyTheJobsCredentialStartsACommand) {
  std::string log = (dir_ / "service.log").string();
  int port = StartService(log);
  std::string err;
  EXPECT_EQ(Run(port, {"touch", (dir_ / "ran").string()}, &err, "another-jobs"), 255);
  EXPECT_THAT(err, HasSubstr("credential refused"));
  EXPECT_FALSE(std::filesystem::exists(dir_ / "ran"));
  EXPECT_THAT(Slurp(log), HasSubstr("not this job's credential"));

  // A task that holds none refuses every caller, even one that holds none either.
  int bare = StartService((dir_ / "bare.log").string(), {}, "");
  EXPECT_EQ(Run(bare, {"true"}, &err, ""), 255);
  EXPECT_THAT(err, HasSubstr("holds no job credential"));
}

TEST_F(ExecServiceTest, TheClientSaysWhyItCannotReachATask) {
  std::string err;
  std::vector<std::string> argv = {COHORT_EXEC_PATH, "cohort-job1-worker-9", "true"};
  SpawnOptions options;
  options.output = (dir_ / "client.log").string();
  options.env = {{"COHORT_JOB_CREDENTIAL", kCredential},
                 {"COHORT_EXEC_ENDPOINTS", "cohort-job1-worker-0=127.0.0.1:1"}};
  EXPECT_EQ(RunToCompletion(argv, options), 255);
  EXPECT_THAT(Slurp(options.output),
              HasSubstr("\"cohort-job1-worker-9\" is not a task of this job that serves commands; "
                        "those are: cohort-job1-worker-0"));
}

TEST_F(ExecServiceTest, ACallerThatHangsUpEndsItsCommand) {
  int port = StartService((dir_ / "service.log").string());
  std::string pid_file = (dir_ / "pid").string();
  std::vector<std::string> argv = {COHORT_EXEC_PATH, "cohort-job1-worker-9",
                                   "echo $$ > " + pid_file + "; exec sleep 300"};
  SpawnOptions options;
  options.env = {
      {"COHORT_JOB_CREDENTIAL", kCredential},
      {"COHORT_EXEC_ENDPOINTS", "cohort-job1-worker-9=127.0.0.1:" + std::to_string(port)}};
  auto client = Spawn(argv, options);
  ASSERT_TRUE(client.ok());
  pid_t command = 0;
  for (int i = 0; i < 200 && command == 0; ++i) {
    command = ReadPidFile(pid_file);
    std::this_thread::sleep_for(std::chrono::milliseconds(25));
  }
  ASSERT_GT(command, 0);
  ASSERT_TRUE(Alive(command));
  ::kill(*client, SIGKILL);  // as when mpirun goes
  int status;
  ::waitpid(*client, &status, 0);
  for (int i = 0; i < 400 && Alive(command); ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(25));
  }
  EXPECT_FALSE(Alive(command)) << "the command of a caller that went away still runs";
}

TEST_F(ExecServiceTest, EachServiceGivesItsCommandsATemporaryDirectoryOfItsOwn) {
  std::string one_log = (dir_ / "one.log").string();
  std::string two_log = (dir_ / "two.log").string();
  int one = StartService(one_log);
  int two = StartService(two_log);
  ASSERT_EQ(Run(one, {"echo", "dirs:$TMPDIR:$OMPI_MCA_btl_vader_backing_directory"}), 0);
  ASSERT_EQ(Run(two, {"echo", "dirs:$TMPDIR:$OMPI_MCA_btl_vader_backing_directory"}), 0);
  auto dirs_of = [](const std::string& log) {
    // The command's own line, not the service's "running for ...: echo dirs:$TMPDIR" before it.
    std::string text = "\n" + Slurp(log);
    size_t at = text.find("\ndirs:");
    if (at == std::string::npos) return std::string();
    ++at;
    return text.substr(at, text.find('\n', at) - at);
  };
  std::string a = dirs_of(one_log);
  std::string b = dirs_of(two_log);
  EXPECT_THAT(a, StartsWith("dirs:" + dir_.string() + "/cohort-exec-"));
  EXPECT_NE(a, b) << "two workers on one machine share Open MPI's shared-memory directory";
  std::string tmp = a.substr(5, a.find(':', 5) - 5);
  EXPECT_EQ(a, "dirs:" + tmp + ":" + tmp);
  EXPECT_TRUE(std::filesystem::is_directory(tmp));
}

TEST_F(ExecServiceTest, WithACommandOfItsOwnTheServiceEndsWithItsStatus) {
  int port = FreePort();
  SpawnOptions options;
  options.output = (dir_ / "service.log").string();
  int status = RunToCompletion(
      {COHORT_EXEC_PATH, "serve", "--port", std::to_string(port), "--", "sh", "-c", "exit 5"},
      options);
  EXPECT_EQ(status, 5);
}

// What srun asks of a node's service: its output back as it comes, variables of its own, a
// working directory and a slice of the task's GPUs.
TEST_F(ExecServiceTest, AStreamedCommandsOutputComesBackWithItsOwnVariablesDirectoryAndGpus) {
  std::string log = (dir_ / "service.log").string();
  int port = StartService(log, {}, kCredential, {{"CUDA_VISIBLE_DEVICES", "4,5,6,7"}});
  Endpoint here{"127.0.0.1", port};
  std::string out, err;
  OutputSink sink{[&](std::string_view d) { out.append(d); },
                  [&](std::string_view d) { err.append(d); }};
  ExecRequest request;
  request.credential = kCredential;
  request.command =
      "echo rank $SLURM_PROCID in $(pwd) on $CUDA_VISIBLE_DEVICES; echo oops >&2; exit 4";
  request.env = {{"SLURM_PROCID", "3"}};
  request.cwd = dir_.string();
  request.gpus = GpuSlice{1, 2};
  request.stream = true;
  ExecAnswer answer = RunSession(here, request, std::chrono::seconds(5), sink);
  EXPECT_EQ(answer.error, "");
  EXPECT_EQ(answer.ExitStatus(), 4);
  EXPECT_EQ(out, "rank 3 in " + dir_.string() + " on 6,7\n");
  EXPECT_EQ(err, "oops\n");
  EXPECT_THAT(Slurp(log), Not(HasSubstr("\noops\n"))) << "streamed output is not the task's log";

  // 8 MiB of output arrives whole, a chunk at a time.
  out.clear();
  request.command = "head -c 8388608 /dev/zero";
  request.gpus.reset();
  size_t chunks = 0;
  sink.out = [&](std::string_view d) {
    out.append(d);
    ++chunks;
  };
  answer = RunSession(here, request, std::chrono::seconds(5), sink);
  EXPECT_EQ(answer.ExitStatus(), 0);
  EXPECT_EQ(out.size(), 8u << 20);
  EXPECT_GT(chunks, 1u);

  // GPUs past the task's are refused, and nothing runs.
  request.command = "touch " + (dir_ / "ran").string();
  request.gpus = GpuSlice{2, 2};
  answer = RunSession(here, request, std::chrono::seconds(5), sink);
  EXPECT_THAT(answer.error, HasSubstr("this task has 4 GPUs (4,5,6,7); GPUs 4 to 5 of it are "
                                      "not there"));
  EXPECT_FALSE(std::filesystem::exists(dir_ / "ran"));
  // A directory that is not there fails the command as a shell would.
  request.gpus.reset();
  request.cwd = (dir_ / "nowhere").string();
  err.clear();
  answer = RunSession(here, request, std::chrono::seconds(5), sink);
  EXPECT_EQ(answer.ExitStatus(), 126);
  EXPECT_THAT(err, HasSubstr("cannot enter"));
}

// A stranger who reaches the port holds a session for at most the request timeout, and no more
// than kMaxRequestBytes of memory.
TEST_F(ExecServiceTest, AStrangerWhoSendsNothingOrTooMuchIsCutOff) {
  int port = FreePort();
  pid_t service = ::fork();
  ASSERT_GE(service, 0);
  if (service == 0) {
    ::setenv("COHORT_JOB_CREDENTIAL", kCredential, 1);
    ServeOptions options;
    options.port = port;
    options.request_timeout = std::chrono::milliseconds(300);
    _exit(Serve(options));
  }
  services_.push_back(service);
  WaitForListening(port);
  auto connect = [&] {
    int fd = ::socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    addr.sin_port = htons(static_cast<uint16_t>(port));
    EXPECT_EQ(::connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)), 0);
    return fd;
  };
  auto answer_of = [](int fd) {
    std::string text;
    char buffer[1024];
    ssize_t n;
    while ((n = ::recv(fd, buffer, sizeof(buffer), 0)) > 0) text.append(buffer, n);
    ::close(fd);
    return text;
  };
  int silent = connect();
  auto started = std::chrono::steady_clock::now();
  EXPECT_THAT(answer_of(silent), HasSubstr("no request within the time allowed"));
  EXPECT_LT(std::chrono::steady_clock::now() - started, std::chrono::seconds(5));

  int flood = connect();
  std::string chunk(64 * 1024, 'x');
  for (size_t sent = 0; sent <= kMaxRequestBytes;) {
    ssize_t n = ::send(flood, chunk.data(), chunk.size(), MSG_NOSIGNAL);
    if (n <= 0) break;
    sent += static_cast<size_t>(n);
  }
  EXPECT_THAT(answer_of(flood), HasSubstr("longer than"));
}

}  // namespace
}  // namespace cohort::exec
