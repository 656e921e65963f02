#include <fmt/format.h>
#include <limits.h>
#include <spdlog/spdlog.h>
#include <unistd.h>

#include <atomic>
#include <csignal>
#include <cstdlib>
#include <optional>

#include "agent/agent.h"
#include "agent/nvml_gpu_probe.h"
#include "agent/nvml_gpu_sampler.h"
#include "agent/task_memory.h"
#include "cohortd/commands.h"
#include "cohortd/slow_store.h"
#include "common/strings.h"
#include "common/units.h"
#include "model/node_validation.h"
#include "os/memory_cgroup.h"
#include "os/proc_stat.h"
#include "os/process.h"
#include "os/real_clock.h"

namespace cohort::cohortd {
namespace {

std::atomic<bool> g_stop{false};

void OnSignal(int) { g_stop = true; }

std::string Hostname() {
  char buf[HOST_NAME_MAX + 1] = {};
  if (::gethostname(buf, sizeof(buf)) != 0) return "localhost";
  return buf;
}

std::string SelfExe() {
  std::string self = OwnExecutable();
  return self.empty() ? "cohortd" : self;
}

bool IsLoopbackUrl(const std::string& url) {
  return url.find("://127.") != std::string::npos || url.find("://localhost") != std::string::npos;
}

}  // namespace

void AddAgentCommand(CLI::App& app, AgentOptions& o) {
  auto* cmd =
      app.add_subcommand("agent", "Run a Cohort agent: offer this machine's GPUs and run tasks");
  cmd->add_option("--master", o.master,
                  "The master's URL (default $COHORT_MASTER, else http://127.0.0.1:7420)");
  cmd->add_option("--ca-file", o.ca_file,
                  "For an https:// master: the CA certificate (PEM) its certificate must be "
                  "signed by, e.g. the cluster's ca.crt (default: the system's CAs)")
      ->envname("COHORT_CA_FILE");
  cmd->add_option("--name", o.name, "This node's unique name (default: the host name)");
  cmd->add_option("--address", o.address,
                  "How tasks on other nodes reach this one (default 127.0.0.1 when the master "
                  "is on loopback, else the host name)");
  cmd->add_option("--data-dir", o.data_dir,
                  "Where task directories live (default " + DefaultDataDir("agent") + ")");
  cmd->add_option("--gpus", o.gpus,
                  "Declare this many fake GPUs instead of reading them from NVML (machines "
                  "without GPUs, demos, tests)")
      ->check(CLI::Range(0, 1024));
  cmd->add_option("--gpu-model", o.gpu_model, "Model name of declared GPUs")->capture_default_str();
  cmd->add_option("--gpu-memory", o.gpu_memory, "Memory of each declared GPU, e.g. 80Gi")
      ->capture_default_str();
  cmd->add_option("--nvml-library", o.nvml_library,
                  "The NVML library to load at run time when --gpus is not given")
      ->capture_default_str();
  cmd->add_option("--cpus", o.cpus, "CPUs to offer (default: all online CPUs)");
  cmd->add_option("--memory", o.memory, "Memory to offer, e.g. 64Gi (default: all of it)");
  cmd->add_option("--ports", o.ports, "Port range FIRST-LAST that the master hands to tasks")
      ->capture_default_str();
  cmd->add_option("--label", o.labels, "A node label KEY=VALUE (repeatable)");
  cmd->add_option("--log-limit", o.log_limit,
                  "Keep at most about this much of each task's output on this node's disk, the "
                  "most recent; also the most of a backlog shipped to the master")
      ->capture_default_str();
  cmd->add_option("--join-token-file", o.join_token_file,
                  "A file holding the cluster's join token (the master writes one to "
                  "<its data-dir>/join-token), else $COHORT_JOIN_TOKEN. Needed to join the "
                  "first time; afterwards the node's own credential in <data-dir>/credential "
                  "is used");
  cmd->add_flag("--allow-root-tasks", o.allow_root_tasks,
                "Run the tasks of jobs whose user is root as root; without it, an agent running "
                "as root refuses them (every other task runs as its job's user)");
  cmd->add_option("--sample-interval", o.sample_interval,
                  "How often to sample GPU utilisation and memory (NVML) and each task's CPU "
                  "and memory (/proc), e.g. 5s")
      ->capture_default_str();
  cmd->add_option("--checkpoint-prompt-bytes", o.checkpoint_prompt_bytes,
                  "A job's checkpoint with at most this much new content goes to the store as "
                  "soon as it is written (docs/data.md, \"Checkpoints\")")
      ->capture_default_str();
  cmd->add_option("--checkpoint-interval", o.checkpoint_interval,
                  "A larger one goes at most once per this interval, and always when its task "
                  "ends unless it succeeded")
      ->capture_default_str();
  cmd->add_option("--checkpoint-final-limit", o.checkpoint_final_limit,
                  "How long an ended task's last checkpoint may hold its GPUs while it goes to "
                  "the store")
      ->capture_default_str();
  cmd->add_option("--dataset-cache-size", o.dataset_cache_size,
                  "The node's dataset cache keeps at most this much of the datasets that no "
                  "task reads, least recently used evicted first (docs/data.md, \"Datasets\")")
      ->capture_default_str();
  cmd->add_option("--runtime", o.runtime,
                  "How tasks whose job names an image run (docs/runtimes.md): podman (rootful; "
                  "the agent must run as root), auto (podman where it is installed and the agent "
                  "is root) or none (this node refuses them)")
      ->capture_default_str();
  cmd->add_option("--oci-runtime", o.oci_runtime,
                  "podman's OCI runtime: runc, crun, or auto (crun on unified cgroup v2, runc on "
                  "a v1 or hybrid layout, which crun refuses)")
      ->capture_default_str();
  cmd->add_option("--container-nproc", o.container_nproc,
                  "RLIMIT_NPROC (and the pids limit) inside each container: the processes and "
                  "threads of the job's account")
      ->check(CLI::Range(int64_t{64}, int64_t{1} << 22))
      ->capture_default_str();
  cmd->add_option("--image-cache-size", o.image_cache_size,
                  "The images this node pulled for tasks take at most about this much of "
                  "podman's store: after a pull, the least recently used go, never one a "
                  "container uses (docs/runtimes.md, \"The image cache\"); 0: no bound")
      ->capture_default_str();
  cmd->add_option("--gpu-device-prefix", o.gpu_device_prefix,
                  "A GPU's device node is this prefix and its index; a container gets those of "
                  "its task's GPUs (tests with --gpus point it at stand-in nodes)")
      ->capture_default_str();
  cmd->add_option("--log-level", o.log_level, "trace, debug, info, warn or error")
      ->capture_default_str();
}

int RunAgent(const AgentOptions& o) {
  if (!SetUpLogging(o.log_level)) {
    fmt::print(stderr, "cohortd agent: --log-level: \"{}\" is not a level\n", o.log_level);
    return 2;
  }
  auto fail = [](const std::string& message) {
    fmt::print(stderr, "cohortd agent: {}\n", message);
    return 2;
  };
  agent::AgentConfig config;
  const char* env_master = std::getenv("COHORT_MASTER");
  std::string master_url = !o.master.empty() ? o.master
                           : env_master      ? env_master
                                             : client::kDefaultMasterUrl;
  config.data_dir = o.data_dir.empty() ? DefaultDataDir("agent") : o.data_dir;
  NodeInfo& node = config.node;
  node.id = o.name.empty() ? Hostname() : o.name;
  node.address = !o.address.empty()          ? o.address
                 : IsLoopbackUrl(master_url) ? "127.0.0.1"
                                             : Hostname();
  node.agent_version = COHORT_VERSION;
  if (o.cpus.empty()) {
    node.milli_cpus = ::sysconf(_SC_NPROCESSORS_ONLN) * 1000;
  } else {
    auto cpus = ParseMilliCpus(o.cpus);
    if (!cpus.ok()) return fail("--cpus: " + cpus.status().message());
    node.milli_cpus = *cpus;
  }
  if (o.memory.empty()) {
    node.memory_bytes = static_cast<int64_t>(::sysconf(_SC_PHYS_PAGES)) * ::sysconf(_SC_PAGESIZE);
  } else {
    auto memory = ParseByteSize(o.memory);
    if (!memory.ok()) return fail("--memory: " + memory.status().message());
    node.memory_bytes = *memory;
  }
  auto range = Split(o.ports, '-');
  std::optional<int> first = range.size() == 2 ? ParseInt(range[0]) : std::nullopt;
  std::optional<int> last = range.size() == 2 ? ParseInt(range[1]) : std::nullopt;
  if (!first || !last) {
    return fail(
        fmt::format("--ports: \"{}\" is not a range FIRST-LAST, e.g. 30000-30999", o.ports));
  }
  node.ports.first = *first;
  node.ports.last = *last;
  if (node.ports.first < 1024 || node.ports.last > 65535 || node.ports.first > node.ports.last) {
    return fail(fmt::format("--ports: {} must lie within 1024-65535", o.ports));
  }
  for (const auto& label : o.labels) {
    size_t eq = label.find('=');
    if (eq == std::string::npos || eq == 0) {
      return fail(fmt::format("--label: \"{}\" is not KEY=VALUE", label));
    }
    if (label.starts_with(kReservedLabelPrefix)) {
      return fail(fmt::format("--label: \"{}\": labels under \"{}\" are the agent's own", label,
                              kReservedLabelPrefix));
    }
    node.labels[label.substr(0, eq)] = label.substr(eq + 1);
  }

  auto log_limit = ParseByteSize(o.log_limit);
  if (!log_limit.ok()) return fail("--log-limit: " + log_limit.status().message());
  if (*log_limit < (1 << 20)) return fail("--log-limit: must be at least 1Mi");
  config.log_limit = *log_limit;
  config.allow_root_tasks = o.allow_root_tasks;
  auto sample_interval = ParseDuration(o.sample_interval);
  if (!sample_interval.ok())
    return fail("--sample-interval: " + sample_interval.status().message());
  if (*sample_interval < std::chrono::seconds(1))
    return fail("--sample-interval: must be at least 1s");
  config.sample_interval = *sample_interval;
  auto prompt_bytes = ParseByteSize(o.checkpoint_prompt_bytes);
  if (!prompt_bytes.ok() || *prompt_bytes < 0) {
    return fail("--checkpoint-prompt-bytes: " + (prompt_bytes.ok()
                                                     ? std::string("must be 0 or more")
                                                     : prompt_bytes.status().message()));
  }
  config.checkpoint_prompt_bytes = *prompt_bytes;
  auto checkpoint_interval = ParseDuration(o.checkpoint_interval);
  if (!checkpoint_interval.ok())
    return fail("--checkpoint-interval: " + checkpoint_interval.status().message());
  config.checkpoint_interval = *checkpoint_interval;
  auto final_limit = ParseDuration(o.checkpoint_final_limit);
  if (!final_limit.ok()) return fail("--checkpoint-final-limit: " + final_limit.status().message());
  config.checkpoint_final_limit = *final_limit;
  auto cache_size = ParseByteSize(o.dataset_cache_size);
  if (!cache_size.ok() || *cache_size < 0) {
    return fail("--dataset-cache-size: " + (cache_size.ok() ? std::string("must be 0 or more")
                                                            : cache_size.status().message()));
  }
  config.dataset_cache_bytes = *cache_size;
  auto containers = agent::FindContainerRuntime(o.runtime, o.oci_runtime, o.container_nproc);
  if (!containers.ok()) return fail(containers.status().message());
  config.containers = *containers;
  if (config.containers) {
    config.containers->gpu_device_prefix = o.gpu_device_prefix;
    auto image_cache = ParseByteSize(o.image_cache_size);
    if (!image_cache.ok()) return fail("--image-cache-size: " + image_cache.status().message());
    config.containers->cache_dir = config.data_dir + "/images";
    config.containers->cache_bytes = *image_cache;
    spdlog::info("tasks in images run with {} --runtime {} (nofile {}, nproc {})",
                 config.containers->podman, config.containers->oci_runtime,
                 config.containers->nofile, config.containers->nproc);
  } else {
    spdlog::info("this node runs no tasks in images (--runtime {})", o.runtime);
  }

  std::unique_ptr<agent::GpuProbe> probe;
  if (o.gpus >= 0) {
    auto memory = ParseByteSize(o.gpu_memory);
    if (!memory.ok()) return fail("--gpu-memory: " + memory.status().message());
    probe = std::make_unique<agent::DeclaredGpuProbe>(node.id, o.gpus, o.gpu_model, *memory);
  } else if (agent::NvmlGpuProbe::LibraryLoadable(o.nvml_library)) {
    probe = std::make_unique<agent::NvmlGpuProbe>(o.nvml_library);
  } else {
    spdlog::info("no NVML library ({}) and no --gpus: this node offers no GPUs", o.nvml_library);
    probe = std::make_unique<agent::DeclaredGpuProbe>(node.id, 0, o.gpu_model, 0);
  }
  auto gpus = probe->Probe();
  if (!gpus.ok()) {
    fmt::print(stderr, "cohortd agent: reading GPUs: {}\n", gpus.status().ToString());
    return 1;
  }

  // The master would refuse the node; say why here, naming the flag behind each field.
  NodeInfo offered = node;
  offered.gpus = gpus->gpus;
  offered.gpu_links = gpus->links;
  offered.gpu_source = gpus->source;
  if (Status valid = ValidateNodeInfo(offered); !valid.ok()) {
    fmt::print(stderr, "cohortd agent: {} (--name, --address, --cpus, --memory, --label):\n",
               valid.message());
    for (const auto& problem : valid.details()) fmt::print(stderr, "  {}\n", problem);
    return 2;
  }

  agent::AgentCredentials credentials;
  credentials.credential_path = config.data_dir + "/credential";
  if (!o.join_token_file.empty()) {
    credentials.join_token = std::string(Trim(ReadFileOrEmpty(o.join_token_file)));
    if (credentials.join_token.empty()) {
      return fail(
          fmt::format("--join-token-file: {} is missing, unreadable or empty", o.join_token_file));
    }
  } else if (const char* env = std::getenv("COHORT_JOIN_TOKEN"); env && *env) {
    credentials.join_token = std::string(Trim(env));
  }
  auto master = agent::HttpMasterClient::Create(master_url, std::move(credentials),
                                                client::TlsOptions{o.ca_file});
  if (!master.ok()) {
    fmt::print(stderr, "cohortd agent: {}\n", master.status().ToString());
    return 1;
  }
  {
    // The task tools are built into tools/ beside cohortd (src/exec/CMakeLists.txt).
    const std::string self = SelfExe();
    std::string tools = self.substr(0, self.rfind('/') + 1) + "tools";
    if (::access((tools + "/cohort-exec").c_str(), X_OK) == 0) {
      config.tools_dir = tools;
    } else {
      spdlog::warn("no {}/cohort-exec: this node refuses MPI jobs' tasks", tools);
    }
  }
  auto launcher = agent::ProcessTaskLauncher::Create(SelfExe());
  if (!launcher.ok()) {
    fmt::print(stderr, "cohortd agent: {}\n", launcher.status().ToString());
    return 1;
  }
  RealClock clock;
  // Declared GPUs have no utilisation to read: they are reported unknown, never made up.
  std::unique_ptr<agent::GpuSampler> gpu_sampler;
  if (gpus->source == "nvml") {
    auto nvml = agent::NvmlGpuSampler::Open(o.nvml_library);
    if (nvml.ok()) {
      gpu_sampler = std::move(nvml).value();
    } else {
      spdlog::warn("GPU utilisation will be unknown: {}", nvml.status().ToString());
    }
  }
  if (!gpu_sampler) {
    gpu_sampler = std::make_unique<agent::DeclaredGpuSampler>(static_cast<int>(gpus->gpus.size()));
  }
  agent::ProcTaskSampler task_sampler;

  std::signal(SIGINT, OnSignal);
  std::signal(SIGTERM, OnSignal);
  std::signal(SIGPIPE, SIG_IGN);
  spdlog::info("cohortd agent {} for node {} ({} GPUs from {}); master {}", COHORT_VERSION, node.id,
               gpus->gpus.size(), gpus->source, master_url);
  // Said once, so that an operator knows whether a task's memory request is also its limit
  // here (docs/job-spec.md, "resources").
  std::optional<MemoryCgroups> memory_cgroups;
  if (auto found = MemoryCgroups::Find(); found.ok()) {
    memory_cgroups = *found;
    spdlog::info("memory requests are enforced as limits: {}", memory_cgroups->Describe());
    if (int n = agent::RemoveLeftoverTaskGroups(*memory_cgroups); n > 0) {
      spdlog::info("removed {} memory cgroups of tasks whose supervisors were killed", n);
    }
  } else {
    spdlog::warn("memory requests are not enforced on this node; tasks run without a limit: {}",
                 found.status().message());
  }
  agent::Agent agent(
      config, std::move(gpus).value(),
      agent::AgentDeps{clock, **launcher, **master, gpu_sampler.get(), &task_sampler,
                       memory_cgroups ? &*memory_cgroups : nullptr, StoreOpenerForThisProcess()});
  Status s = agent.Run(g_stop);
  if (!s.ok()) {
    fmt::print(stderr, "cohortd agent: {}\n", s.ToString());
    return 1;
  }
  spdlog::info("agent stopped; its tasks keep running and a new agent adopts them");
  spdlog::shutdown();
  return 0;
}

}  // namespace cohort::cohortd
