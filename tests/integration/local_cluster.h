// A real Cohort cluster on loopback for integration tests: cohortd master and agents as child
// processes of the test, each task a real process, a real SQLite file. Everything lives in a
// scratch directory that is removed when the test passes and kept (with its logs printed) when
// it fails.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "client/cohort_client.h"

namespace cohort::testing {

// Where the built binaries, the sources and the fake NVML library are (set by CMake).
std::string BinDir();
std::string SourceDir();
std::string FakeNvmlLibrary();

struct CommandResult {
  int exit_code = -1;
  std::string out;
  std::string err;
};

// Runs a command to completion, capturing its output; in `cwd` when given.
CommandResult RunCommand(const std::vector<std::string>& args,
                         const std::map<std::string, std::string>& env = {},
                         const std::string& cwd = "");

// A port of 127.0.0.1 free now (bound, read, released), for a server a test starts. Never 9090,
// where a Prometheus that Debian's package started as a service may listen.
int FreeLoopbackPort();

// Polls `condition` every 20 ms until it holds or `timeout` passes.
bool WaitFor(const std::function<bool()>& condition,
             std::chrono::milliseconds timeout = std::chrono::seconds(20));

// The name of the account running the test, which the cluster's jobs are submitted as.
std::string TestAccount();

bool ProcessAlive(pid_t pid);
// "0,1" as CUDA_VISIBLE_DEVICES writes GPU indices.
std::string JoinGpus(const std::vector<int>& gpus);
// The pids of `root` and all its descendants.
std::vector<pid_t> ProcessTree(pid_t root);

struct LocalClusterOptions {
  // HTTPS: a CA and a master certificate for 127.0.0.1 in the cluster's directory; the master
  // serves with them, agents get --ca-file, the test's client and Cohort() trust the CA.
  bool tls = false;
  // When not 0, the master runs under this open-file limit, soft and hard (util-linux prlimit),
  // so that it cannot raise it.
  int master_open_files = 0;
};

class LocalCluster {
 public:
  explicit LocalCluster(const std::string& name, LocalClusterOptions options = {});
  ~LocalCluster();

  void StartMaster(std::vector<std::string> extra_args = {},
                   std::map<std::string, std::string> env = {});
  // SIGTERM, and waits for it to exit.
  void StopMaster();
  // With `allow_root_tasks`, the agent runs tasks of root as root (the tests run as root).
  void StartAgent(const std::string& name, int gpus, std::vector<std::string> extra_args = {},
                  std::map<std::string, std::string> env = {}, bool allow_root_tasks = true);
  // Starts an agent and returns at once, without waiting for it to register; with TLS, it gets
  // the CA file only if `trust_ca`.
  void LaunchAgent(const std::string& name, int gpus, std::vector<std::string> extra_args = {},
                   std::map<std::string, std::string> env = {}, bool trust_ca = true,
                   bool allow_root_tasks = true);
  // Agents launched from now on reach the master at `url` (a proxy that a test can cut) rather
  // than at url(); "" goes back to url().
  void RouteAgentsThrough(std::string url) { agent_master_url_ = std::move(url); }
  void StopAgent(const std::string& name);
  // The machine died: SIGKILL to the agent and to every task it started (their supervisors'
  // process trees), all at once. The agent's data directory is left as it was.
  void KillMachine(const std::string& name);
  // The machine froze or its network went: SIGSTOP to the agent and every task it started, so
  // that their sockets stay open and say nothing. KillMachine ends them.
  void FreezeMachine(const std::string& name);

  const std::string& url() const { return url_; }
  // The token of the cluster admin that the master made on its first start.
  const std::string& admin_token() const { return admin_token_; }
  // The join token agents join with.
  std::string join_token() const;
  // A raw HTTP client of the master sending `token` (default: the admin's) with every request.
  StatusOr<std::unique_ptr<client::HttpClient>> Http(const std::string& token = {}) const;
  const std::string& dir() const { return dir_; }
  // With TLS, the CA certificate that signed the master's; else "".
  const std::string& ca_file() const { return ca_file_; }
  pid_t master_pid() const { return master_.pid; }
  client::CohortClient& client();

  // Submits a YAML or JSON spec as TestAccount(); fails the test if refused.
  JobId Submit(const std::string& spec);
  // Waits until `predicate` holds for the job; returns its latest state either way.
  Job WaitForJob(JobId id, const std::function<bool(const Job&)>& predicate,
                 std::chrono::milliseconds timeout = std::chrono::seconds(30));
  Job WaitForState(JobId id, JobState state,
                   std::chrono::milliseconds timeout = std::chrono::seconds(30));
  // The whole output of a job (every task of the current attempt, or of `attempt`).
  std::string Logs(JobId id, const std::string& task = "", int attempt = 0);
  // Every event of the job, a "type: message" line each; "" if the master cannot say.
  std::string EventsText(JobId id);
  // Runs the `cohort` CLI against this cluster (with TLS, trusting its CA: COHORT_CA_FILE), in
  // `cwd`, by default an empty directory of the cluster's (so that `cohort run` sends no code).
  CommandResult Cohort(std::vector<std::string> args, const std::string& cwd = "");
  // The agent's data directory, and its log.
  std::string AgentDir(const std::string& name) const { return dir_ + "/" + name; }
  std::string AgentLog(const std::string& name) const { return dir_ + "/" + name + ".log"; }

 private:
  struct Child {
    pid_t pid = 0;
    std::string log;
  };
  pid_t Spawn(const std::vector<std::string>& args, const std::string& log,
              const std::map<std::string, std::string>& env);
  // The agent's processes and those of every task it started (their supervisors' trees).
  std::vector<pid_t> MachineProcesses(const std::string& name);
  int first_port_;
  std::string dir_;
  std::string url_;
  std::string agent_master_url_;
  std::string admin_token_;
  std::vector<std::string> tls_args_;  // the master's --tls-cert and --tls-key
  int master_open_files_ = 0;
  std::string ca_file_;
  int master_port_ = 0;
  Child master_;
  std::map<std::string, Child> agents_;
  int agent_count_ = 0;
  std::unique_ptr<client::CohortClient> client_;
};

}  // namespace cohort::testing
