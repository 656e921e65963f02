#include "tests/integration/local_cluster.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <pwd.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <thread>

#include "common/strings.h"
#include "os/process.h"
#include "tls/certificates.h"

namespace cohort::testing {
namespace {

namespace fs = std::filesystem;

std::string Tail(const std::string& text, size_t lines) {
  size_t pos = text.size();
  for (size_t n = 0; n <= lines && pos != std::string::npos && pos > 0; ++n) {
    pos = text.rfind('\n', pos - 1);
  }
  return pos == std::string::npos ? text : text.substr(pos + 1);
}

// Waits for a child, up to `timeout`; returns false if it is still running.
bool Reap(pid_t pid, std::chrono::milliseconds timeout) {
  return WaitFor([&] { return ::waitpid(pid, nullptr, WNOHANG) == pid || !ProcessAlive(pid); },
                 timeout);
}

}  // namespace

std::string BinDir() { return COHORT_BIN_DIR; }
std::string SourceDir() { return COHORT_SOURCE_DIR; }
std::string FakeNvmlLibrary() { return COHORT_FAKE_NVML; }

CommandResult RunCommand(const std::vector<std::string>& args,
                         const std::map<std::string, std::string>& env, const std::string& cwd) {
  char out_path[] = "/tmp/cohort-cmd-out-XXXXXX";
  char err_path[] = "/tmp/cohort-cmd-err-XXXXXX";
  int out_fd = ::mkstemp(out_path);
  int err_fd = ::mkstemp(err_path);
  std::vector<std::string> copy = args;
  std::vector<char*> argv;
  for (auto& a : copy) argv.push_back(a.data());
  argv.push_back(nullptr);
  pid_t pid = ::fork();
  if (pid == 0) {
    ::dup2(out_fd, STDOUT_FILENO);
    ::dup2(err_fd, STDERR_FILENO);
    for (const auto& [k, v] : env) ::setenv(k.c_str(), v.c_str(), 1);
    if (!cwd.empty() && ::chdir(cwd.c_str()) != 0) _exit(126);
    ::execv(argv[0], argv.data());
    _exit(127);
  }
  int status = 0;
  ::waitpid(pid, &status, 0);
  ::close(out_fd);
  ::close(err_fd);
  CommandResult r;
  r.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  r.out = ReadFileOrEmpty(out_path);
  r.err = ReadFileOrEmpty(err_path);
  ::unlink(out_path);
  ::unlink(err_path);
  return r;
}

int FreeLoopbackPort() {
  int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof(addr);
  int port = 0;
  if (::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) == 0 &&
      ::getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len) == 0) {
    port = ntohs(addr.sin_port);
  }
  ::close(fd);
  return port;
}

bool WaitFor(const std::function<bool()>& condition, std::chrono::milliseconds timeout) {
  auto deadline = std::chrono::steady_clock::now() + timeout;
  while (true) {
    if (condition()) return true;
    if (std::chrono::steady_clock::now() > deadline) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
}

std::string TestAccount() {
  const passwd* pw = ::getpwuid(::geteuid());
  return pw && pw->pw_name ? pw->pw_name : std::to_string(::geteuid());
}

bool ProcessAlive(pid_t pid) {
  if (pid <= 0 || ::kill(pid, 0) != 0) return false;
  // A zombie is dead for our purposes.
  std::string stat = ReadFileOrEmpty(fmt::format("/proc/{}/stat", pid));
  size_t close = stat.rfind(')');
  return close == std::string::npos || close + 2 >= stat.size() || stat[close + 2] != 'Z';
}

std::string JoinGpus(const std::vector<int>& gpus) {
  std::string out;
  for (int g : gpus) {  // appends, not `"," + ...`: that trips GCC 12's -Wrestrict at -O3
    if (!out.empty()) out += ',';
    out += std::to_string(g);
  }
  return out;
}

std::vector<pid_t> ProcessTree(pid_t root) {
  std::vector<pid_t> out = {root};
  for (pid_t pid : Descendants(root)) out.push_back(pid);
  return out;
}

LocalCluster::LocalCluster(const std::string& name, LocalClusterOptions options) {
  // Each test process gets its own task port ranges, so that tests running in parallel never
  // hand out the same port; all below 32768, where Linux's ephemeral ports begin (its default
  // ip_local_port_range is 32768-60999): a rendezvous port in that range was once taken by an
  // outgoing connection, and torch's TCPStore failed with "Address already in use".
  first_port_ = 10000 + static_cast<int>(::getpid() % 220) * 100;
  dir_ = fmt::format("/tmp/cohort-it-{}-{}", name, ::getpid());
  fs::remove_all(dir_);
  fs::create_directories(dir_);
  master_open_files_ = options.master_open_files;
  if (options.tls) {
    auto ca = tls::CreateCa(dir_ + "/tls", false);
    EXPECT_TRUE(ca.ok()) << ca.status().ToString();
    auto master = tls::IssueCertificate(
        tls::IssueRequest{dir_ + "/tls", "master", {"127.0.0.1", "localhost"}});
    EXPECT_TRUE(master.ok()) << master.status().ToString();
    if (ca.ok() && master.ok()) {
      ca_file_ = ca->cert;
      tls_args_ = {"--tls-cert", master->cert, "--tls-key", master->key};
    }
  }
}

LocalCluster::~LocalCluster() {
  client_.reset();
  std::vector<pid_t> daemons;
  for (auto& [name, a] : agents_) daemons.push_back(a.pid);
  if (master_.pid) daemons.push_back(master_.pid);
  for (pid_t p : daemons) ::kill(p, SIGTERM);
  for (pid_t p : daemons) {
    if (!Reap(p, std::chrono::seconds(5))) {
      ::kill(p, SIGKILL);
      ::waitpid(p, nullptr, 0);
    }
  }
  // Whatever tasks are left: kill their supervisors and process groups.
  std::error_code ec;
  for (const auto& entry : fs::recursive_directory_iterator(dir_, ec)) {
    if (entry.path().filename() != "supervisor.pid") continue;
    pid_t sup = std::atoi(ReadFileOrEmpty(entry.path().string()).c_str());
    pid_t task =
        std::atoi(ReadFileOrEmpty((entry.path().parent_path() / "task.pid").string()).c_str());
    std::string cmdline = ReadFileOrEmpty(fmt::format("/proc/{}/cmdline", sup));
    if (sup > 0 && cmdline.find("run-task") != std::string::npos) ::kill(sup, SIGKILL);
    if (task > 0) ::kill(-task, SIGKILL);
  }
  if (::testing::Test::HasFailure()) {
    std::string logs;
    for (const auto& entry : fs::directory_iterator(dir_, ec)) {
      if (entry.path().extension() == ".log") {
        logs += fmt::format("---- {} (last lines)\n{}", entry.path().string(),
                            Tail(ReadFileOrEmpty(entry.path().string()), 25));
      }
    }
    fmt::print(stderr, "cluster kept in {}\n{}", dir_, logs);
  } else {
    fs::remove_all(dir_, ec);
  }
}

pid_t LocalCluster::Spawn(const std::vector<std::string>& args, const std::string& log,
                          const std::map<std::string, std::string>& env) {
  // Same session as the test: a test that dies takes its daemons' terminal signals with it.
  auto pid = cohort::Spawn(args, SpawnOptions{log, /*new_session=*/false, env});
  EXPECT_TRUE(pid.ok()) << pid.status().ToString();
  return pid.ok() ? *pid : 0;
}

void LocalCluster::StartMaster(std::vector<std::string> extra_args,
                               std::map<std::string, std::string> env) {
  std::string url_file = dir_ + "/master.url";
  fs::remove(url_file);
  std::vector<std::string> args = {BinDir() + "/cohortd",
                                   "master",
                                   "--data-dir",
                                   dir_ + "/master",
                                   "--listen",
                                   fmt::format("127.0.0.1:{}", master_port_),
                                   "--url-file",
                                   url_file,
                                   "--log-level",
                                   "debug"};
  args.insert(args.end(), tls_args_.begin(), tls_args_.end());
  args.insert(args.end(), extra_args.begin(), extra_args.end());
  if (master_open_files_ > 0) {
    // prlimit sets the limit and executes the master in its place: the pid is the master's.
    args.insert(args.begin(),
                {"/usr/bin/prlimit",
                 fmt::format("--nofile={}:{}", master_open_files_, master_open_files_), "--"});
  }
  master_ = Child{Spawn(args, dir_ + "/master.log", env), dir_ + "/master.log"};
  ASSERT_TRUE(WaitFor([&] { return fs::exists(url_file); }, std::chrono::seconds(10)))
      << "the master did not start:\n"
      << ReadFileOrEmpty(dir_ + "/master.log");
  std::string url = ReadFileOrEmpty(url_file);
  url_ = url.substr(0, url.find('\n'));
  master_port_ = std::atoi(url_.substr(url_.rfind(':') + 1).c_str());
  // The first start wrote the admin token before listening; later starts keep it.
  admin_token_ = std::string(Trim(ReadFileOrEmpty(dir_ + "/master/admin-token")));
  ASSERT_FALSE(admin_token_.empty()) << "the master wrote no admin token";
  auto c = client::CohortClient::Create(url_, admin_token_, client::TlsOptions{ca_file_});
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  client_ = std::move(c).value();
}

void LocalCluster::StopMaster() {
  ASSERT_GT(master_.pid, 0);
  ::kill(master_.pid, SIGTERM);
  ASSERT_TRUE(Reap(master_.pid, std::chrono::seconds(10))) << "the master did not stop";
  master_.pid = 0;
  client_.reset();
}

void LocalCluster::StartAgent(const std::string& name, int gpus,
                              std::vector<std::string> extra_args,
                              std::map<std::string, std::string> env, bool allow_root_tasks) {
  LaunchAgent(name, gpus, std::move(extra_args), std::move(env), true, allow_root_tasks);
  bool registered = WaitFor([&] {
    auto nodes = client().Nodes();
    if (!nodes.ok()) return false;
    for (const auto& n : (*nodes)["nodes"]) {
      if (n["id"] == name && n["state"] == "READY") return true;
    }
    return false;
  });
  ASSERT_TRUE(registered) << "agent " << name << " did not register:\n"
                          << ReadFileOrEmpty(AgentLog(name));
}

void LocalCluster::LaunchAgent(const std::string& name, int gpus,
                               std::vector<std::string> extra_args,
                               std::map<std::string, std::string> env, bool trust_ca,
                               bool allow_root_tasks) {
  int first = first_port_ + agent_count_++ * 20;
  std::vector<std::string> args = {BinDir() + "/cohortd",
                                   "agent",
                                   "--master",
                                   agent_master_url_.empty() ? url_ : agent_master_url_,
                                   "--name",
                                   name,
                                   "--data-dir",
                                   AgentDir(name),
                                   "--cpus",
                                   "16",
                                   "--memory",
                                   "64Gi",
                                   "--ports",
                                   fmt::format("{}-{}", first, first + 19),
                                   "--join-token-file",
                                   dir_ + "/master/join-token",
                                   "--log-level",
                                   "debug"};
  if (allow_root_tasks) args.push_back("--allow-root-tasks");
  if (gpus >= 0) {
    args.push_back("--gpus");
    args.push_back(std::to_string(gpus));
  }
  if (!ca_file_.empty() && trust_ca) {
    args.push_back("--ca-file");
    args.push_back(ca_file_);
  }
  args.insert(args.end(), extra_args.begin(), extra_args.end());
  agents_[name] = Child{Spawn(args, AgentLog(name), env), AgentLog(name)};
}

void LocalCluster::StopAgent(const std::string& name) {
  auto it = agents_.find(name);
  ASSERT_NE(it, agents_.end());
  ::kill(it->second.pid, SIGTERM);
  ASSERT_TRUE(Reap(it->second.pid, std::chrono::seconds(10)));
  agents_.erase(it);
}

std::vector<pid_t> LocalCluster::MachineProcesses(const std::string& name) {
  auto it = agents_.find(name);
  if (it == agents_.end()) return {};
  std::vector<pid_t> all = ProcessTree(it->second.pid);
  std::error_code ec;
  for (const auto& entry : std::filesystem::directory_iterator(AgentDir(name) + "/tasks", ec)) {
    pid_t supervisor = ReadPidFile(entry.path().string() + "/supervisor.pid");
    if (supervisor <= 0) continue;
    for (pid_t p : ProcessTree(supervisor)) all.push_back(p);
  }
  return all;
}

void LocalCluster::FreezeMachine(const std::string& name) {
  ASSERT_TRUE(agents_.count(name));
  for (pid_t p : MachineProcesses(name)) ::kill(p, SIGSTOP);
}

void LocalCluster::KillMachine(const std::string& name) {
  auto it = agents_.find(name);
  ASSERT_NE(it, agents_.end());
  // Stop everything first so that nothing reacts to the others' deaths, then kill.
  std::vector<pid_t> doomed = MachineProcesses(name);
  for (pid_t p : doomed) ::kill(p, SIGSTOP);
  for (pid_t p : doomed) ::kill(p, SIGKILL);
  ASSERT_TRUE(Reap(it->second.pid, std::chrono::seconds(10)));
  agents_.erase(it);
}

std::string LocalCluster::join_token() const {
  return std::string(Trim(ReadFileOrEmpty(dir_ + "/master/join-token")));
}

StatusOr<std::unique_ptr<client::HttpClient>> LocalCluster::Http(const std::string& token) const {
  COHORT_ASSIGN_OR_RETURN(auto http,
                          client::HttpClient::Create(url_, client::TlsOptions{ca_file_}));
  http->SetHeader("Authorization", "Bearer " + (token.empty() ? admin_token_ : token));
  return http;
}

client::CohortClient& LocalCluster::client() {
  COHORT_CHECK(client_ != nullptr);
  return *client_;
}

JobId LocalCluster::Submit(const std::string& spec) {
  auto job = client().Submit(spec);
  EXPECT_TRUE(job.ok()) << job.status().ToString();
  return job.ok() ? job->id : 0;
}

Job LocalCluster::WaitForJob(JobId id, const std::function<bool(const Job&)>& predicate,
                             std::chrono::milliseconds timeout) {
  auto deadline = std::chrono::steady_clock::now() + timeout;
  auto job = client().GetJob(id);
  while (job.ok() && !predicate(*job)) {
    auto left = std::chrono::duration_cast<Duration>(deadline - std::chrono::steady_clock::now());
    if (left <= Duration(0)) break;
    job = client().WaitJob(id, job->version, std::min<Duration>(left, std::chrono::seconds(5)));
  }
  EXPECT_TRUE(job.ok()) << job.status().ToString();
  return job.ok() ? *job : Job{};
}

Job LocalCluster::WaitForState(JobId id, JobState state, std::chrono::milliseconds timeout) {
  Job job = WaitForJob(
      id, [&](const Job& j) { return j.state == state || IsTerminal(j.state); }, timeout);
  EXPECT_EQ(JobStateName(job.state), std::string(JobStateName(state)))
      << "job " << id << ": " << job.message << "\n"
      << Logs(id);
  return job;
}

std::string LocalCluster::EventsText(JobId id) {
  auto events = client().Events(id);
  std::string text;
  if (!events.ok()) return text;
  for (const auto& e : *events) text += e.type + ": " + e.message + "\n";
  return text;
}

std::string LocalCluster::Logs(JobId id, const std::string& task, int attempt) {
  std::string out;
  Status s = client().Logs(id, task, attempt, false, [&](std::string_view data) {
    out.append(data);
    return true;
  });
  EXPECT_TRUE(s.ok()) << s.ToString();
  return out;
}

CommandResult LocalCluster::Cohort(std::vector<std::string> args, const std::string& cwd) {
  args.insert(args.begin(), BinDir() + "/cohort");
  const std::string empty = dir_ + "/cwd";
  std::filesystem::create_directories(empty);
  // The cluster's own config directory: `cohort login` in a test must not touch the user's.
  std::map<std::string, std::string> env = {{"COHORT_MASTER", url_},
                                            {"COHORT_TOKEN", admin_token_},
                                            {"XDG_CONFIG_HOME", dir_ + "/config"}};
  if (!ca_file_.empty()) env["COHORT_CA_FILE"] = ca_file_;
  return RunCommand(args, env, cwd.empty() ? empty : cwd);
}

}  // namespace cohort::testing
