// up and down: a local cluster (one master, N agents with declared GPUs) on this machine.
//
// `up` starts the daemons in their own sessions, writes one pid file each into the data
// directory, and waits until every agent has registered. With --tls, the master serves HTTPS
// with a certificate of a CA kept in DATA_DIR/tls, which the agents and the CLI trust. `down` stops
// exactly the processes named by those pid files (checking that each pid is still that cohortd),
// and the tasks that those agents started.
#include <fcntl.h>
#include <fmt/format.h>
#include <limits.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <thread>

#include "cli/cli.h"
#include "cli/credentials.h"
#include "common/strings.h"
#include "os/proc_stat.h"
#include "os/process.h"
#include "tls/certificates.h"

namespace cohort::cli {
namespace {

namespace fs = std::filesystem;

struct UpOptions {
  int agents = 2;
  int gpus_per_agent = 4;
  std::string cpus_per_agent = "8";
  std::string memory_per_agent = "32Gi";
  std::string gpu_model = "Fake GPU";
  int port = 7420;
  std::string data_dir;
  double timeout = 30;
  bool tls = false;
  std::string task_ports;  // FROM-TO; empty: 1000 ports an agent from 30000
};

struct DownOptions {
  std::string data_dir;
};

std::string DefaultClusterDir() {
  const char* xdg = std::getenv("XDG_DATA_HOME");
  if (xdg && *xdg) return std::string(xdg) + "/cohort/cluster";
  const char* home = std::getenv("HOME");
  return std::string(home && *home ? home : "/tmp") + "/.local/share/cohort/cluster";
}

bool IsOurs(pid_t pid, const std::string& needle, const std::string& dir) {
  if (pid <= 0) return false;
  std::string cmdline = CommandLine(pid);
  return cmdline.find(needle) != std::string::npos && cmdline.find(dir) != std::string::npos;
}

bool Alive(pid_t pid) { return ::kill(pid, 0) == 0; }

// The dashboard's link that signs the admin in, on stderr (stdout stays the URL alone, for
// scripts). A master too old to make one is no reason to fail `up`.
void PrintSignInLink(client::CohortClient& admin) {
  auto link = SignInLink(admin);
  if (!link.ok()) {
    fmt::print(stderr, "dashboard: {} (cohort dashboard prints a sign-in link)\n",
               link.status().message());
    return;
  }
  fmt::print(stderr,
             "dashboard: open {} to sign in as {} (works once, until {}; `cohort dashboard` "
             "prints a new one)\n",
             (*link)["url"].get<std::string>(), (*link)["user"].get<std::string>(),
             (*link)["expires_at"].get<std::string>());
}

StatusOr<std::string> FindCohortd() {
  if (std::string own = OwnExecutable(); !own.empty()) {
    fs::path self(own);
    for (const auto& candidate : {self.parent_path() / "cohortd"}) {
      if (::access(candidate.c_str(), X_OK) == 0) return candidate.string();
    }
  }
  if (auto found = FindOnPath("cohortd")) return *found;
  return Status::NotFound("cannot find the cohortd binary next to cohort or on PATH");
}

struct LocalCertificates {
  std::string ca;  // what agents and clients trust
  std::string cert;
  std::string key;
};

// The CA of `dir` (made on the first `up --tls`, kept afterwards, so that an exported
// COHORT_CA_FILE stays good), and a new certificate for the master on loopback.
StatusOr<LocalCertificates> MakeCertificates(const std::string& dir) {
  tls::CaFiles ca = tls::CaFilesIn(dir);
  std::error_code ec;
  if (!fs::exists(ca.cert, ec) || !fs::exists(ca.key, ec)) {
    COHORT_ASSIGN_OR_RETURN(ca, tls::CreateCa(dir, /*force=*/true));
  }
  COHORT_ASSIGN_OR_RETURN(tls::IssuedFiles master, tls::IssueCertificate(tls::IssueRequest{
                                                       dir, "master", {"127.0.0.1", "localhost"}}));
  return LocalCertificates{ca.cert, master.cert, master.key};
}

std::string Tail(const std::string& path, size_t lines) {
  std::string text = ReadFileOrEmpty(path);
  size_t pos = text.size();
  for (size_t n = 0; n <= lines && pos != std::string::npos && pos > 0; ++n) {
    pos = text.rfind('\n', pos - 1);
  }
  return pos == std::string::npos ? text : text.substr(pos + 1);
}

// SIGTERM to each, then SIGKILL to whatever is still there after `grace`.
void Terminate(const std::vector<pid_t>& pids, std::chrono::milliseconds grace) {
  for (pid_t p : pids) ::kill(p, SIGTERM);
  auto deadline = std::chrono::steady_clock::now() + grace;
  while (std::chrono::steady_clock::now() < deadline) {
    bool any = false;
    for (pid_t p : pids) {
      ::waitpid(p, nullptr, WNOHANG);
      any |= Alive(p);
    }
    if (!any) return;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  for (pid_t p : pids) ::kill(p, SIGKILL);
}

int StopCluster(const std::string& dir, bool quiet) {
  std::vector<pid_t> daemons;
  std::vector<std::string> names;
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator(dir, ec)) {
    if (entry.path().extension() != ".pid") continue;
    pid_t pid = ReadPidFile(entry.path().string());
    if (IsOurs(pid, "cohortd", dir)) {
      daemons.push_back(pid);
      names.push_back(entry.path().stem().string());
    }
    fs::remove(entry.path(), ec);
  }
  Terminate(daemons, std::chrono::seconds(10));
  // The agents leave their tasks running on purpose (an agent restart must not kill jobs);
  // taking the whole cluster down does stop them.
  std::vector<pid_t> supervisors;
  std::vector<pid_t> task_groups;
  for (const auto& agent : fs::directory_iterator(dir, ec)) {
    if (!agent.is_directory()) continue;
    std::error_code inner;
    for (const auto& task : fs::directory_iterator(agent.path() / "tasks", inner)) {
      pid_t sup = ReadPidFile((task.path() / "supervisor.pid").string());
      if (!IsOurs(sup, "run-task", task.path().string())) continue;
      supervisors.push_back(sup);
      task_groups.push_back(ReadPidFile((task.path() / "task.pid").string()));
    }
  }
  Terminate(supervisors, std::chrono::seconds(5));
  for (pid_t g : task_groups) {
    if (g > 0) ::kill(-g, SIGKILL);
  }
  if (!quiet) {
    if (names.empty()) {
      fmt::print(stderr, "no cluster was running from {}\n", dir);
    } else {
      std::sort(names.begin(), names.end());
      std::string list;
      for (const auto& n : names) list += (list.empty() ? "" : ", ") + n;
      fmt::print(stderr, "stopped {}{}\n", list,
                 supervisors.empty() ? "" : fmt::format(" and {} tasks", supervisors.size()));
    }
  }
  return 0;
}

// Each agent's task port range, "FIRST-LAST": --task-ports split evenly among the agents (agents
// of one machine share its ports, so each needs its own), or 1000 an agent from 30000. Checked
// before anything starts: a bad range names the flag.
StatusOr<std::vector<std::string>> AgentPortRanges(const UpOptions& o) {
  std::vector<std::string> ranges;
  if (o.task_ports.empty()) {
    for (int i = 0; i < o.agents; ++i) {
      ranges.push_back(fmt::format("{}-{}", 30000 + i * 1000, 30000 + i * 1000 + 999));
    }
    return ranges;
  }
  auto bounds = Split(o.task_ports, '-');
  int from = 0, to = 0;
  bool parsed = bounds.size() == 2;
  for (size_t i = 0; parsed && i < 2; ++i) {
    std::optional<int> port = ParseInt(bounds[i]);
    parsed = port.has_value();
    (i == 0 ? from : to) = port.value_or(0);
  }
  if (!parsed) {
    return Status::InvalidArgument(fmt::format(
        "--task-ports: \"{}\" is not a port range FROM-TO, e.g. 40000-40999", o.task_ports));
  }
  if (from < 1024 || to > 65535 || from > to) {
    return Status::InvalidArgument(fmt::format(
        "--task-ports: {} must be FROM-TO with 1024 <= FROM <= TO <= 65535", o.task_ports));
  }
  if (o.port >= from && o.port <= to) {
    return Status::InvalidArgument(
        fmt::format("--task-ports: {} holds the master's port {} (--port); choose a range without "
                    "it",
                    o.task_ports, o.port));
  }
  const int ports = to - from + 1;
  if (ports < o.agents) {
    return Status::InvalidArgument(
        fmt::format("--task-ports: {} holds {} port{}, fewer than the {} agents, which each need "
                    "their own",
                    o.task_ports, ports, ports == 1 ? "" : "s", o.agents));
  }
  const int each = o.agents > 0 ? ports / o.agents : 0;
  for (int i = 0; i < o.agents; ++i) {
    ranges.push_back(fmt::format("{}-{}", from + i * each, from + (i + 1) * each - 1));
  }
  return ranges;
}

int RunUp(const UpOptions& o) {
  auto port_ranges = AgentPortRanges(o);
  if (!port_ranges.ok()) return Fail("up", port_ranges.status());
  std::string dir = fs::absolute(o.data_dir.empty() ? DefaultClusterDir() : o.data_dir).string();
  std::error_code ec;
  fs::create_directories(dir, ec);
  if (ec)
    return Fail("up", Status::Internal(fmt::format("cannot create {}: {}", dir, ec.message())));
  pid_t running = ReadPidFile(dir + "/master.pid");
  if (IsOurs(running, "cohortd", dir)) {
    return Fail("up", Status::FailedPrecondition(fmt::format(
                          "a cluster is already running from {} (master pid {}); run `cohort down "
                          "--data-dir {}` first",
                          dir, running, dir)));
  }
  auto cohortd = FindCohortd();
  if (!cohortd.ok()) return Fail("up", cohortd.status());
  std::string url = fmt::format("{}://127.0.0.1:{}", o.tls ? "https" : "http", o.port);
  std::vector<std::string> master_tls, agent_tls;
  client::TlsOptions tls_options;
  if (o.tls) {
    auto certs = MakeCertificates(dir + "/tls");
    if (!certs.ok()) return Fail("up", certs.status());
    master_tls = {"--tls-cert", certs->cert, "--tls-key", certs->key};
    agent_tls = {"--ca-file", certs->ca};
    tls_options.ca_file = certs->ca;
  }
  Progress progress;
  progress.Update("starting the master");
  struct Daemon {
    std::string name;
    pid_t pid;
  };
  std::vector<Daemon> daemons;
  auto abort = [&](const Status& s, const std::string& log) {
    progress.Done();
    Fail("up", s);
    if (!log.empty()) fmt::print(stderr, "last lines of {}:\n{}", log, Tail(log, 15));
    StopCluster(dir, true);
    return 1;
  };
  auto start = [&](const std::string& name, std::vector<std::string> args) -> Status {
    auto pid = Spawn(args, SpawnOptions{dir + "/" + name + ".log", true, {}});
    if (!pid.ok()) return pid.status();
    std::ofstream(dir + "/" + name + ".pid") << *pid << "\n";
    daemons.push_back(Daemon{name, *pid});
    return Status::Ok();
  };
  std::vector<std::string> master_args = {*cohortd,     "master",
                                          "--data-dir", dir + "/master",
                                          "--listen",   fmt::format("127.0.0.1:{}", o.port)};
  master_args.insert(master_args.end(), master_tls.begin(), master_tls.end());
  Status s = start("master", master_args);
  if (!s.ok()) return abort(s, "");
  auto deadline = std::chrono::steady_clock::now() +
                  std::chrono::milliseconds(static_cast<int64_t>(o.timeout * 1000));
  // The master writes the admin and join tokens on its first start, before it listens; agents
  // join with the one, this command and the user's later commands use the other.
  const std::string admin_token_file = dir + "/master/admin-token";
  const std::string join_token_file = dir + "/master/join-token";
  auto plain = client::CohortClient::Create(url, {}, tls_options);
  if (!plain.ok()) return abort(plain.status(), "");
  while (!(*plain)->Health().ok() || ReadFileOrEmpty(admin_token_file).empty()) {
    int status = 0;
    if (::waitpid(daemons[0].pid, &status, WNOHANG) == daemons[0].pid) {
      return abort(Status::Internal("the master exited at start"), dir + "/master.log");
    }
    if (std::chrono::steady_clock::now() > deadline) {
      return abort(
          Status::DeadlineExceeded(fmt::format("the master did not start within {}s", o.timeout)),
          dir + "/master.log");
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  std::string admin_token(Trim(ReadFileOrEmpty(admin_token_file)));
  // Run as root, `up` is root's own cluster: its jobs are root's, and their tasks run as root
  // (an agent refuses that unless told). Tasks of other users run as those users.
  const bool root = ::geteuid() == 0;
  for (int i = 0; i < o.agents; ++i) {
    std::string name = fmt::format("agent-{}", i);
    std::vector<std::string> args = {*cohortd,
                                     "agent",
                                     "--master",
                                     url,
                                     "--name",
                                     name,
                                     "--data-dir",
                                     dir + "/" + name,
                                     "--gpus",
                                     std::to_string(o.gpus_per_agent),
                                     "--gpu-model",
                                     o.gpu_model,
                                     "--cpus",
                                     o.cpus_per_agent,
                                     "--memory",
                                     o.memory_per_agent,
                                     "--ports",
                                     (*port_ranges)[i],
                                     "--join-token-file",
                                     join_token_file};
    if (root) args.push_back("--allow-root-tasks");
    args.insert(args.end(), agent_tls.begin(), agent_tls.end());
    s = start(name, args);
    if (!s.ok()) return abort(s, "");
  }
  auto client = client::CohortClient::Create(url, admin_token, tls_options);
  if (!client.ok()) return abort(client.status(), "");
  // The local CLI finds the cluster's admin token by itself from now on (cohort login's file).
  if (Status saved = SaveToken(url, admin_token); !saved.ok()) return abort(saved, "");
  while (true) {
    for (const auto& d : daemons) {
      int status = 0;
      if (::waitpid(d.pid, &status, WNOHANG) == d.pid) {
        return abort(Status::Internal(fmt::format("{} exited at start", d.name)),
                     dir + "/" + d.name + ".log");
      }
    }
    auto nodes = (*client)->Nodes();
    int ready = 0;
    if (nodes.ok()) {
      for (const auto& n : (*nodes)["nodes"]) {
        ready += n["state"] == NodeStateName(NodeState::kReady);
      }
    }
    progress.Update(nodes.ok()
                        ? fmt::format("waiting for agents: {}/{} registered", ready, o.agents)
                        : "waiting for the master");
    if (nodes.ok() && ready >= o.agents) break;  // with no agents, still the master
    if (std::chrono::steady_clock::now() > deadline) {
      return abort(Status::DeadlineExceeded(fmt::format(
                       "only {} of {} agents registered within {}s", ready, o.agents, o.timeout)),
                   dir + "/master.log");
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  progress.Done();
  fmt::print(stderr, "cluster up: {} agents x {} GPUs, data and logs in {}\n", o.agents,
             o.gpus_per_agent, dir);
  if (root) {
    fmt::print(stderr,
               "running as root: tasks of root's jobs run as root (agents have "
               "--allow-root-tasks); other users' tasks run as those users\n");
  }
  PrintSignInLink(**client);
  if (o.tls) {
    // On stdout, so that `eval "$(cohort up --tls)"` sets them.
    fmt::print(stderr, "over HTTPS; use it with:\n");
    fmt::print("export COHORT_MASTER={}\nexport COHORT_CA_FILE={}\n", url, tls_options.ca_file);
    return 0;
  }
  if (url != client::kDefaultMasterUrl) {
    fmt::print(stderr, "use it with: export COHORT_MASTER={}\n", url);
  }
  fmt::print("{}\n", url);
  return 0;
}

}  // namespace

void AddClusterCommands(CLI::App& app, GlobalOptions& g) {
  auto up = std::make_shared<UpOptions>();
  auto* u = app.add_subcommand(
      "up", "Start a local cluster: a master and N agents with declared (fake) GPUs");
  u->add_option("--agents", up->agents, "Number of agents")
      ->check(CLI::Range(0, 64))
      ->capture_default_str();
  u->add_option("--gpus-per-agent", up->gpus_per_agent, "GPUs each agent declares")
      ->check(CLI::Range(0, 64))
      ->capture_default_str();
  u->add_option("--cpus-per-agent", up->cpus_per_agent, "CPUs each agent offers")
      ->capture_default_str();
  u->add_option("--memory-per-agent", up->memory_per_agent, "Memory each agent offers")
      ->capture_default_str();
  u->add_option("--gpu-model", up->gpu_model, "Model name of the declared GPUs")
      ->capture_default_str();
  u->add_option("--port", up->port, "The master's port on 127.0.0.1")
      ->check(CLI::Range(1, 65535))
      ->capture_default_str();
  u->add_option("--data-dir", up->data_dir,
                "Where the cluster keeps its state, logs and pid files (default " +
                    DefaultClusterDir() + ")");
  u->add_option("--timeout", up->timeout, "Seconds to wait for every agent to register")
      ->capture_default_str();
  u->add_option("--task-ports", up->task_ports,
                "Ports FROM-TO that the agents hand to tasks, split evenly among them (default: "
                "1000 an agent from 30000)");
  u->add_flag("--tls", up->tls,
              "Serve HTTPS: a CA in <data-dir>/tls (made once, then kept) signs the master's "
              "certificate; prints the COHORT_MASTER and COHORT_CA_FILE to export");
  u->callback([up] {
    int rc = RunUp(*up);
    if (rc) throw CLI::RuntimeError(rc);
  });

  auto down = std::make_shared<DownOptions>();
  auto* d = app.add_subcommand(
      "down", "Stop the local cluster that `cohort up` started, and the tasks it runs");
  d->add_option("--data-dir", down->data_dir,
                "The cluster's data directory (default " + DefaultClusterDir() + ")");
  d->callback([down] {
    std::string dir =
        fs::absolute(down->data_dir.empty() ? DefaultClusterDir() : down->data_dir).string();
    int rc = StopCluster(dir, false);
    if (rc) throw CLI::RuntimeError(rc);
  });
  (void)g;
}

}  // namespace cohort::cli
