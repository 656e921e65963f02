#include "exec/srun.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <signal.h>
#include <sys/file.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cctype>
#include <cstdlib>
#include <iterator>
#include <map>
#include <mutex>
#include <optional>
#include <thread>

#include "common/strings.h"
#include "exec/exec_session.h"
#include "slurm/hostlist.h"
#include "slurm/slurm_environment.h"

extern char** environ;

namespace cohort::exec {
namespace {

constexpr const char* kSrunUsage =
    "Usage: srun [-n NTASKS] [-N NODES] [--ntasks-per-node N] [-c CPUS] [--gpus-per-task N] "
    "[-K] [-l] COMMAND [ARGS...]\n"
    "Runs COMMAND as a step of this Cohort Slurm job: NTASKS tasks (default: the job's) over its "
    "first NODES nodes, each with SLURM_PROCID, SLURM_LOCALID and SLURM_NODEID, their output on "
    "this one's (-l: each line labelled with its task), the exit status the worst of theirs.\n";

std::string Env(const char* name) {
  const char* value = ::getenv(name);
  return value ? value : "";
}

int Fail(const std::string& why) {
  fmt::print(stderr, "srun: error: {}\n", why);
  return 1;
}

// What of srun's own environment its tasks get: all of it, as Slurm's default --export=ALL (the
// batch script's `export MASTER_ADDR=...` reaches every task), but what each node's service sets
// for its own node and task (the node's name and GPUs, Cohort's variables of the serving task,
// its private TMPDIR) and the shell's own bookkeeping.
std::map<std::string, std::string> ExportedEnvironment() {
  static constexpr std::string_view kNodes[] = {"SLURMD_NODENAME",
                                                "SLURM_NODEID",
                                                "SLURM_PROCID",
                                                "SLURM_LOCALID",
                                                "SLURM_CPUS_ON_NODE",
                                                "SLURM_GPUS_ON_NODE",
                                                "SLURM_TOPOLOGY_ADDR",
                                                "CUDA_VISIBLE_DEVICES",
                                                "TMPDIR",
                                                "OMPI_MCA_btl_vader_backing_directory",
                                                "PWD",
                                                "OLDPWD",
                                                "SHLVL",
                                                "_"};
  std::map<std::string, std::string> env;
  for (char** e = environ; e && *e; ++e) {
    std::string_view entry = *e;
    const size_t eq = entry.find('=');
    if (eq == std::string_view::npos) continue;
    std::string_view name = entry.substr(0, eq);
    // Not a variable a task could be given (bash's exported functions, "BASH_FUNC_f%%").
    const bool plain = !name.empty() && !std::isdigit(static_cast<unsigned char>(name[0])) &&
                       std::all_of(name.begin(), name.end(), [](char c) {
                         return std::isalnum(static_cast<unsigned char>(c)) || c == '_';
                       });
    if (!plain || name.starts_with("COHORT_") ||
        std::find(std::begin(kNodes), std::end(kNodes), name) != std::end(kNodes)) {
      continue;
    }
    env.emplace(name, entry.substr(eq + 1));
  }
  return env;
}

struct SrunOptions {
  std::optional<int> ntasks;
  std::optional<int> nodes;
  std::optional<int> ntasks_per_node;
  std::optional<int> cpus_per_task;
  std::optional<int> gpus_per_task;
  bool label = false;
  bool kill_on_bad_exit = false;
  std::vector<std::string> command;
};

// "--name=value", "--name value", "-Xvalue", "-X value": the value, or nullopt if `args[i]` is
// not this option; moves `i` past what it used.
std::optional<std::string> OptionValue(const std::vector<std::string>& args, size_t& i,
                                       std::string_view long_name, std::string_view short_name) {
  const std::string& a = args[i];
  for (std::string_view name : {long_name, short_name}) {
    if (name.empty() || a.rfind(name, 0) != 0) continue;
    std::string rest = a.substr(name.size());
    if (rest.empty()) {
      if (i + 1 >= args.size()) return std::nullopt;
      return args[++i];
    }
    if (name.size() > 2 && rest[0] == '=') return rest.substr(1);
    if (name.size() == 2) return rest;
  }
  return std::nullopt;
}

StatusOr<SrunOptions> ParseSrun(const std::vector<std::string>& args) {
  SrunOptions o;
  size_t i = 0;
  auto count = [&](const std::string& name, const std::string& text) -> StatusOr<int> {
    auto value = ParseInteger(text, 1, 65536);
    if (!value)
      return Status::InvalidArgument(fmt::format("{}: \"{}\" is not a count", name, text));
    return static_cast<int>(*value);
  };
  for (; i < args.size(); ++i) {
    const std::string& a = args[i];
    if (a == "--") {
      ++i;
      break;
    }
    if (a.empty() || a[0] != '-') break;
    if (a == "-l" || a == "--label") {
      o.label = true;
      continue;
    }
    if (a == "-u" || a == "--unbuffered") continue;  // output is relayed as it comes anyway
    if (a == "-K" || a == "--kill-on-bad-exit" || a == "-K1" || a == "--kill-on-bad-exit=1") {
      o.kill_on_bad_exit = true;
      continue;
    }
    if (a == "-K0" || a == "--kill-on-bad-exit=0") {
      o.kill_on_bad_exit = false;
      continue;
    }
    struct Counted {
      std::string_view long_name, short_name;
      std::optional<int>* into;
    };
    bool matched = false;
    for (Counted c : {Counted{"--ntasks", "-n", &o.ntasks}, Counted{"--nodes", "-N", &o.nodes},
                      Counted{"--ntasks-per-node", "", &o.ntasks_per_node},
                      Counted{"--cpus-per-task", "-c", &o.cpus_per_task},
                      Counted{"--gpus-per-task", "", &o.gpus_per_task}}) {
      size_t at = i;
      // --ntasks-per-node starts with --ntasks: the longer name first.
      if (c.long_name == "--ntasks" && a.rfind("--ntasks-", 0) == 0) continue;
      auto value = OptionValue(args, at, c.long_name, c.short_name);
      if (!value) continue;
      COHORT_ASSIGN_OR_RETURN(*c.into, count(std::string(c.long_name), *value));
      i = at;
      matched = true;
      break;
    }
    if (!matched) {
      return Status::InvalidArgument(
          fmt::format("unknown option \"{}\": Cohort's srun takes -n, -N, --ntasks-per-node, -c, "
                      "--gpus-per-task and -l",
                      a));
    }
  }
  o.command.assign(args.begin() + static_cast<std::ptrdiff_t>(i), args.end());
  if (o.command.empty()) return Status::InvalidArgument("no command to run");
  return o;
}

// A word as /bin/sh reads it back.
std::string ShellQuoted(const std::string& word) {
  std::string out = "'";
  for (char c : word) out += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return out + "'";
}

// This job's next step id: counted in a file of the batch script's private TMPDIR (its exec
// service's), under a lock, so that steps started at once get ids of their own.
int NextStepId() {
  std::string dir = Env("TMPDIR");
  // Named by the job and attempt too: where TMPDIR is shared, each attempt counts its own.
  const std::string name =
      fmt::format("/cohort-srun-steps-{}-{}", Env("SLURM_JOB_ID"), Env("COHORT_ATTEMPT"));
  int fd =
      ::open(((dir.empty() ? "/tmp" : dir) + name).c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0600);
  if (fd < 0) return 0;
  ::flock(fd, LOCK_EX);
  char text[32] = {};
  ssize_t n = ::pread(fd, text, sizeof(text) - 1, 0);
  int id = n > 0 ? std::atoi(text) : 0;
  std::string next = std::to_string(id + 1);
  if (::pwrite(fd, next.data(), next.size(), 0) < 0 ||
      ::ftruncate(fd, static_cast<off_t>(next.size())) != 0) {
    // Another step may get this id too: it only names the step.
  }
  ::close(fd);
  return id;
}

// Lines of the tasks' output onto srun's own, whole lines at a time, labelled with -l.
class Output {
 public:
  explicit Output(bool label) : label_(label) {}
  OutputSink For(int task) {
    return OutputSink{[this, task](std::string_view d) { Add(task, 0, d); },
                      [this, task](std::string_view d) { Add(task, 1, d); }};
  }
  void Flush(int task) {
    std::lock_guard lock(mu_);
    for (int channel : {0, 1}) {
      std::string& rest = pending_[{task, channel}];
      if (!rest.empty()) Write(task, channel, rest + "\n");
      rest.clear();
    }
  }

 private:
  void Add(int task, int channel, std::string_view data) {
    std::lock_guard lock(mu_);
    std::string& pending = pending_[{task, channel}];
    pending.append(data);
    size_t end = pending.rfind('\n');
    if (end == std::string::npos) {
      if (pending.size() < 64 * 1024) return;  // a line that long goes out as it is
      end = pending.size() - 1;
    }
    Write(task, channel, pending.substr(0, end + 1));
    pending.erase(0, end + 1);
  }
  void Write(int task, int channel, const std::string& lines) {
    FILE* to = channel == 0 ? stdout : stderr;
    if (!label_) {
      std::fwrite(lines.data(), 1, lines.size(), to);
    } else {
      for (const std::string& line :
           Split(std::string_view(lines).substr(0, lines.size() - 1), '\n')) {
        fmt::print(to, "{}: {}\n", task, line);
      }
    }
    std::fflush(to);
  }
  bool label_;
  std::mutex mu_;
  std::map<std::pair<int, int>, std::string> pending_;
};

}  // namespace

int RunSrun(const std::vector<std::string>& args) {
  if (!args.empty() && (args[0] == "--help" || args[0] == "-h")) {
    fmt::print("{}", kSrunUsage);
    return 0;
  }
  auto options = ParseSrun(args);
  if (!options.ok()) return Fail(options.status().message() + "\n" + kSrunUsage);
  // As Slurm's srun, what the job asked for per task is each step's default: sbatch's
  // --gpus-per-task ("1", or "a100:1") and --cpus-per-task reach srun as these variables.
  if (!options->gpus_per_task) {
    std::string text = Env("SLURM_GPUS_PER_TASK");
    text = text.substr(text.rfind(':') == std::string::npos ? 0 : text.rfind(':') + 1);
    if (auto n = ParseInteger(text, 1, 64)) options->gpus_per_task = static_cast<int>(*n);
  }
  if (!options->cpus_per_task) {
    if (auto n = ParseInteger(Env("SLURM_CPUS_PER_TASK"), 1, 1 << 20)) {
      options->cpus_per_task = static_cast<int>(*n);
    }
  }
  const std::string nodelist = Env("SLURM_JOB_NODELIST");
  const std::string credential = Env("COHORT_JOB_CREDENTIAL");
  if (nodelist.empty() || credential.empty()) {
    return Fail(
        "not inside a Cohort Slurm job ($SLURM_JOB_NODELIST or $COHORT_JOB_CREDENTIAL is not "
        "set): run srun in a script that `cohort sbatch` started");
  }
  auto job_nodes = slurm::ExpandHostlist(nodelist);
  if (!job_nodes.ok()) return Fail("SLURM_JOB_NODELIST: " + job_nodes.status().message());
  std::vector<int> job_tasks(job_nodes->size(), 1);
  if (std::string text = Env("SLURM_TASKS_PER_NODE"); !text.empty()) {
    auto counts = slurm::ParseCountsPerNode(text);
    if (!counts.ok() || counts->size() != job_nodes->size()) {
      return Fail("SLURM_TASKS_PER_NODE: does not give a count for each node of the job");
    }
    job_tasks = *counts;
  }
  // The step's nodes: the job's first N; its tasks over them, a block each, the first nodes
  // taking one more where they do not divide evenly (Slurm's block distribution).
  const int nodes = options->nodes.value_or(static_cast<int>(job_nodes->size()));
  if (nodes > static_cast<int>(job_nodes->size())) {
    return Fail(fmt::format("-N {}: the job has {} node{}", nodes, job_nodes->size(),
                            job_nodes->size() == 1 ? "" : "s"));
  }
  std::vector<int> per_node(static_cast<size_t>(nodes), 0);
  if (options->ntasks_per_node) {
    std::fill(per_node.begin(), per_node.end(), *options->ntasks_per_node);
  } else {
    std::copy_n(job_tasks.begin(), nodes, per_node.begin());
  }
  int total = 0;
  for (int n : per_node) total += n;
  if (options->ntasks) {
    if (*options->ntasks < nodes) {
      return Fail(fmt::format("-n {}: fewer tasks than the step's {} nodes; add -N {}",
                              *options->ntasks, nodes, *options->ntasks));
    }
    for (int i = 0; i < nodes; ++i) {
      per_node[static_cast<size_t>(i)] = *options->ntasks / nodes + (i < *options->ntasks % nodes);
    }
    total = *options->ntasks;
  }
  std::vector<std::string> step_nodes(job_nodes->begin(), job_nodes->begin() + nodes);
  const std::string endpoints = Env("COHORT_EXEC_ENDPOINTS");
  std::vector<Endpoint> where;
  for (const auto& node : step_nodes) {
    auto endpoint = FindEndpoint(endpoints, node);
    if (!endpoint.ok()) return Fail(fmt::format("node {}: {}", node, endpoint.status().message()));
    where.push_back(*endpoint);
  }
  const int step_id = NextStepId();
  const int cpus_on_node =
      static_cast<int>(ParseInteger(Env("SLURM_CPUS_ON_NODE"), 1, 1 << 20).value_or(1));
  std::vector<std::string> quoted;
  for (const auto& word : options->command) quoted.push_back(ShellQuoted(word));
  char cwd[4096];
  const std::string here = ::getcwd(cwd, sizeof(cwd)) ? cwd : "";

  const std::map<std::string, std::string> exported = ExportedEnvironment();
  if (exported.size() + 64 > kMaxRequestVariables) {
    return Fail(
        fmt::format("the environment has {} variables; srun passes at most {} to its "
                    "tasks",
                    exported.size(), kMaxRequestVariables - 64));
  }
  Output output(options->label);
  std::vector<ExecAnswer> answers(static_cast<size_t>(total));
  // -K: the first task that fails ends the others.
  std::vector<SessionCancel> cancels(static_cast<size_t>(total));
  auto ended = [&](int procid) {
    const ExecAnswer& a = answers[static_cast<size_t>(procid)];
    if (!options->kill_on_bad_exit || a.ExitStatus() == 0 ||
        cancels[static_cast<size_t>(procid)].cancelled()) {
      return;
    }
    for (int other = 0; other < total; ++other) {
      if (other != procid) cancels[static_cast<size_t>(other)].Cancel();
    }
  };
  // Signals to srun go to every task of the step, as Slurm's srun passes them on (a batch
  // script's --signal, scancel --signal, Ctrl-C): taken by a thread of their own, blocked
  // everywhere else (the session threads inherit the mask).
  sigset_t forwarded;
  sigemptyset(&forwarded);
  for (int s : {SIGINT, SIGTERM, SIGHUP, SIGQUIT, SIGUSR1, SIGUSR2, SIGCONT, SIGALRM}) {
    sigaddset(&forwarded, s);
  }
  ::pthread_sigmask(SIG_BLOCK, &forwarded, nullptr);
  std::atomic<bool> step_done = false;
  std::thread forwarder([&] {
    const timespec tick{0, 100'000'000};
    while (!step_done) {
      int number = ::sigtimedwait(&forwarded, nullptr, &tick);
      if (number <= 0) continue;
      for (auto& cancel : cancels) cancel.Signal(number);
    }
  });
  std::vector<std::thread> threads;
  int procid = 0;
  for (int node = 0; node < nodes; ++node) {
    for (int local = 0; local < per_node[static_cast<size_t>(node)]; ++local, ++procid) {
      slurm::SlurmStepTask task;
      task.step_id = step_id;
      task.nodes = step_nodes;
      task.tasks_per_node = per_node;
      task.node_index = node;
      task.procid = procid;
      task.localid = local;
      task.gpus_on_node = options->gpus_per_task.value_or(0);
      ExecRequest request;
      request.credential = credential;
      // exec: the task is the command itself, not a shell around it, so that the signals srun
      // passes on reach the program (Lightning's SIGUSR1) rather than end a shell.
      request.command = "exec " + Join(quoted, " ");
      request.env = exported;
      for (auto& [name, value] : slurm::StepVariables(task, cpus_on_node)) {
        request.env[name] = std::move(value);
      }
      if (options->cpus_per_task) {
        request.env["SLURM_CPUS_PER_TASK"] = std::to_string(*options->cpus_per_task);
      }
      if (options->gpus_per_task) request.gpus = GpuSlice{local, *options->gpus_per_task};
      request.cwd = here;
      request.stream = true;
      threads.emplace_back([&, request, endpoint = where[static_cast<size_t>(node)], procid] {
        answers[static_cast<size_t>(procid)] =
            RunSession(endpoint, request, std::chrono::seconds(60), output.For(procid),
                       &cancels[static_cast<size_t>(procid)]);
        output.Flush(procid);
        ended(procid);
      });
    }
  }
  for (auto& t : threads) t.join();
  step_done = true;
  forwarder.join();
  int worst = 0;
  procid = 0;
  for (int node = 0; node < nodes; ++node) {
    for (int local = 0; local < per_node[static_cast<size_t>(node)]; ++local, ++procid) {
      const ExecAnswer& a = answers[static_cast<size_t>(procid)];
      const std::string& name = step_nodes[static_cast<size_t>(node)];
      if (cancels[static_cast<size_t>(procid)].cancelled() && !a.error.empty()) {
        // Ended for another task's failure (-K): that one's status is srun's.
        fmt::print(stderr,
                   "srun: error: {}: task {}: ended: another task failed "
                   "(--kill-on-bad-exit)\n",
                   name, procid);
        continue;
      }
      if (!a.error.empty()) {
        fmt::print(stderr, "srun: error: {}: task {}: {}\n", name, procid, a.error);
      } else if (a.signal) {
        fmt::print(stderr, "srun: error: {}: task {}: Killed by signal {}\n", name, procid,
                   *a.signal);
      } else if (a.exit_code.value_or(0) != 0) {
        fmt::print(stderr, "srun: error: {}: task {}: Exited with exit code {}\n", name, procid,
                   *a.exit_code);
      }
      worst = std::max(worst, a.ExitStatus());
    }
  }
  return worst;
}

int RunScontrol(const std::vector<std::string>& args) {
  if (args.size() >= 2 && args[0] == "show" && args[1] == "hostnames") {
    std::string list = args.size() > 2 ? args[2] : Env("SLURM_JOB_NODELIST");
    if (list.empty()) {
      fmt::print(stderr, "scontrol: error: no hostlist given and $SLURM_JOB_NODELIST is not set\n");
      return 1;
    }
    auto names = slurm::ExpandHostlist(list);
    if (!names.ok()) {
      fmt::print(stderr, "scontrol: error: {}\n", names.status().message());
      return 1;
    }
    for (const auto& name : *names) fmt::print("{}\n", name);
    return 0;
  }
  if (args.size() == 3 && args[0] == "show" && args[1] == "hostlist") {
    auto names = slurm::ExpandHostlist(args[2]);
    if (!names.ok()) {
      fmt::print(stderr, "scontrol: error: {}\n", names.status().message());
      return 1;
    }
    fmt::print("{}\n", slurm::CompressHostlist(*names));
    return 0;
  }
  fmt::print(stderr,
             "scontrol: error: Cohort's scontrol does `show hostnames [LIST]` and `show hostlist "
             "LIST` only\n");
  return 1;
}

}  // namespace cohort::exec
