#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <boost/asio.hpp>
#include <filesystem>
#include <fstream>

#include "api/api_server.h"
#include "api/asio_event_loop.h"
#include "auth/job_credential.h"
#include "cli/policy_tuning_flags.h"
#include "cohortd/bootstrap.h"
#include "cohortd/commands.h"
#include "cohortd/data_directory.h"
#include "common/strings.h"
#include "common/units.h"
#include "master/master.h"
#include "model/image_reference.h"
#include "os/disk_space.h"
#include "os/durable_file.h"
#include "os/file_limit.h"
#include "os/proc_stat.h"
#include "os/process.h"
#include "os/real_clock.h"
#include "scheduler/policy_tuning.h"
#include "scheduler/scheduler.h"
#include "state/metric_store.h"
#include "state/state_store.h"
#include "store/open_store.h"
#include "store/s3_access_issuer.h"
#include "tls/context.h"

namespace cohort::cohortd {
namespace {

// The key of jobs' credentials (auth/job_credential.h), made on the first start and kept: a
// restarted master gives running jobs' tasks the credentials they already hold.
StatusOr<std::string> JobCredentialKey(const std::string& data_dir) {
  const std::string path = data_dir + "/job-credential.key";
  std::error_code ec;
  if (std::filesystem::exists(path, ec)) {
    std::string key = ReadFileOrEmpty(path);
    if (key.size() != auth::kJobCredentialKeyBytes) {
      return Status::Internal(fmt::format(
          "{} holds {} bytes, not the {} of a key: restore it from a backup, or delete it to "
          "make a new one (the tasks of running MPI jobs then cannot start ranks until they "
          "restart)",
          path, key.size(), auth::kJobCredentialKeyBytes));
    }
    return key;
  }
  COHORT_ASSIGN_OR_RETURN(std::string key, auth::MintJobCredentialKey());
  COHORT_RETURN_IF_ERROR(WriteFileAtomically(path, key, 0600));
  return key;
}

// The cap on connections unless --max-connections says otherwise: about two per agent (its long
// poll and its log uploads) for a thousand agents, and people following logs. And the file
// descriptors kept free below the open-file limit for everything else (the database, logs).
constexpr size_t kDefaultMaxConnections = 4096;
constexpr size_t kReservedFiles = 128;

}  // namespace

void AddMasterCommand(CLI::App& app, MasterOptions& o) {
  auto* cmd = app.add_subcommand("master", "Run the Cohort master: API, scheduler and state");
  cmd->add_option(
      "--data-dir", o.data_dir,
      "Where the state database and task logs live (default " + DefaultDataDir("master") + ")");
  cmd->add_option("--listen", o.listen,
                  "HOST:PORT to serve the API on (every call but the health check needs a "
                  "token; see docs/security.md)")
      ->capture_default_str();
  cmd->add_option("--storage-root", o.storage_root,
                  "Where jobs' checkpoints and outputs go; every node must see it at the same "
                  "path (default <data-dir>/storage)");
  cmd->add_option("--image-registry", o.image_registries,
                  "HOST[:PORT] of a registry that tasks' images may come from (repeatable; "
                  "docs/runtimes.md); the first is the default for an image that names none");
  cmd->add_option("--insecure-image-registry", o.insecure_image_registries,
                  "HOST[:PORT] of a registry reached over plain HTTP or without checking its "
                  "certificate (a registry on loopback; repeatable); the default when no "
                  "--image-registry is given");
  cmd->add_option("--store", o.store,
                  "Where jobs' outputs go once they end (docs/data.md): a directory every node "
                  "sees at the same path (agents write to it directly; default "
                  "<data-dir>/store), or s3://BUCKET/PREFIX with --store-config");
  cmd->add_option("--store-config", o.store_config,
                  "For --store s3://...: a YAML file of mode 0600 with endpoint, region, "
                  "access_key, secret_key and optionally role_arn (each job's agents then get "
                  "credentials for its keys only; docs/security.md)");
  cmd->add_option("--store-quota-per-team", o.store_quota,
                  "The bytes of jobs' outputs each team may keep in the store; a job whose "
                  "outputs would pass it has them refused, with an event saying so (0: no limit)")
      ->capture_default_str();
  cmd->add_option("--url-file", o.url_file,
                  "Once listening, write the API's URL here (useful with --listen HOST:0)");
  cmd->add_option("--node-timeout", o.node_timeout,
                  "A node silent for this long is LOST: its tasks are LOST and their gangs "
                  "requeued")
      ->capture_default_str();
  cmd->add_option("--log-level", o.log_level, "trace, debug, info, warn or error")
      ->capture_default_str();
  cmd->add_option("--policy", o.policy,
                  "Order of pending jobs: default (team fair share, priority, user share, "
                  "submission), fifo (strict submission order), fifo+backfill, or las (least "
                  "attained service); +backfill or -backfill after a name says whether jobs "
                  "behind a blocked one may start (docs/scheduler.md)")
      ->capture_default_str();
  cmd->add_flag("--no-backfill", o.no_backfill,
                "Strict order: a job that cannot start blocks every job behind it (the same as "
                "-backfill after the policy's name)");
  cmd->add_option("--default-runtime", o.default_runtime,
                  "Assumed run time of jobs without max_runtime, for reservations (default: "
                  "forever)");
  cmd->add_flag("--no-priority-preemption", o.no_priority_preemption,
                "Never preempt a job for a higher-priority job of its team");
  cmd->add_flag("--no-quota-reclaim", o.no_quota_reclaim,
                "Never preempt borrowers for a team below its guarantee");
  cmd->add_option("--unknown-team-fallback", o.unknown_team_fallback,
                  "Send jobs of teams nobody created to this team instead of refusing them");
  cmd->add_option("--incremental-above", o.incremental_above,
                  "With this many jobs waiting, arrivals and completions are decided at once "
                  "between full scheduling passes (0: always)")
      ->capture_default_str();
  cmd->add_option("--max-queued-per-user", o.max_queued_per_user,
                  "PENDING jobs one user may have; a submission beyond it is refused (429) "
                  "until some start or are killed (0: no cap)")
      ->capture_default_str()
      ->check(CLI::Range(0, 1000000));
  cmd->add_option("--max-queued-per-team", o.max_queued_per_team,
                  "PENDING jobs one team may have, all its users together (0: no cap)")
      ->capture_default_str()
      ->check(CLI::Range(0, 1000000));
  cmd->add_option("--preemption-min-runtime", o.preemption_min_runtime,
                  "A job is never preempted before it has run this long")
      ->capture_default_str();
  cli::AddPolicyTuningFlags(cmd, o.tuning);
  cmd->add_option("--max-connections", o.max_connections,
                  fmt::format("Connections served at once; more are answered 503 (default {}, or "
                              "the open-file limit less {} if that is lower)",
                              kDefaultMaxConnections, kReservedFiles))
      ->check(CLI::PositiveNumber);
  cmd->add_option("--max-connections-per-address", o.max_connections_per_address,
                  fmt::format("Connections one client address (an IPv6 /64) may hold at once; at "
                              "the cap one of its own idle ones makes room for its new one, else "
                              "that is answered 503 (default {}; 0: no cap, e.g. behind a proxy "
                              "that many clients share)",
                              api::HttpLimits{}.max_connections_per_address))
      ->check(CLI::NonNegativeNumber);
  cmd->add_option("--admin-user", o.admin_user,
                  "On the first start, the cluster admin's user name (default: this process's "
                  "Unix account); their token goes to <data-dir>/admin-token");
  cmd->add_option("--log-limit", o.log_limit,
                  "Keep at most this much of each task's log, the most recent output; readers "
                  "are told how much was dropped")
      ->capture_default_str();
  cmd->add_option("--state-disk-reserve", o.state_disk_reserve,
                  "Free space kept on the data directory's disk: below it the master is "
                  "read-only (reads, log following and agents' syncs served; changes answered "
                  "503) until 1.5 times as much is free")
      ->capture_default_str();
  cmd->add_option("--tls-cert", o.tls_cert,
                  "Serve HTTPS instead of plain HTTP, with this certificate (PEM, then any "
                  "intermediates; cohortd cert issue); needs --tls-key");
  cmd->add_option("--tls-key", o.tls_key, "The private key of --tls-cert (PEM, unencrypted)");
  cmd->add_option("--web-dir", o.web_dir,
                  "Serve the dashboard's files from here at http(s)://HOST:PORT/ (default "
                  "<directory of cohortd>/../web, where the build writes them; none: no "
                  "dashboard)");
  cmd->add_option("--audit-retention", o.audit_retention,
                  "Keep audit log entries this long (pruned at most once an hour)")
      ->capture_default_str();
  cmd->add_option("--idle-gpu-after", o.idle_gpu_after,
                  "Advise that a running job's GPUs are idle once none of them has been busy for "
                  "this long (docs/observability.md, \"Advice\")")
      ->capture_default_str();
  cmd->add_option("--advice-window", o.advice_window,
                  "Advise that a job's GPUs are starved once they have been mostly idle with its "
                  "CPUs saturated for this long")
      ->capture_default_str();
  cmd->add_option("--sign-in-code-ttl", o.sign_in_code_ttl,
                  "How long a dashboard sign-in link (cohort dashboard) stays usable; each "
                  "works once (docs/security.md, \"Dashboard sign-in\")")
      ->capture_default_str();
  cmd->add_option("--session-ttl", o.session_ttl,
                  "How long a dashboard session lasts before its user signs in again")
      ->capture_default_str();
  cmd->add_flag("--init", o.init,
                "Start a new cluster in a data directory that shows an earlier one but lost its "
                "database (without it, the master refuses: restore the database instead; see "
                "docs/reliability.md)");
  cmd->add_flag("--no-dataset-staging", o.no_dataset_staging,
                "Start a job on the nodes chosen for it even where their caches lack its "
                "datasets, its tasks pulling them with its GPUs held, rather than hold it back "
                "while those nodes fetch them (docs/data.md, \"Placement and the pull\")");
  cmd->add_option("--max-idle-timeout", o.max_idle_timeout,
                  "End an interactive session (cohort shell) whose GPUs have been idle with no "
                  "input this long; also the longest idle timeout a session may ask for "
                  "(docs/runtimes.md, \"Idle sessions\")")
      ->capture_default_str();
  cmd->add_option("--session-warning", o.session_warning,
                  "Warn a session's terminal this long before it is ended for idleness or "
                  "preempted (at most half its idle timeout)")
      ->capture_default_str();
  cmd->add_option("--interactive-priority", o.interactive_priority,
                  "The priority sessions run at, whatever they ask (low, normal, high or an "
                  "integer from -1000 to 1000); they count against their team's quota like any "
                  "job")
      ->capture_default_str();
  cmd->add_flag("--reclaim-idle-gpus", o.reclaim_idle_gpus,
                "Take back the GPUs of a job that leaves them idle for --idle-gpu-after: it "
                "ends FAILED, or, if its restart.on includes preempted, is requeued once, kept "
                "off those nodes for --idle-gpu-after (docs/reliability.md)");
}

namespace {

// Below this, a log would keep less than a screenful of long lines.
constexpr int64_t kMinLogLimit = 64 * 1024;

StatusOr<scheduler::SchedulerConfig> SchedulerConfigFrom(const MasterOptions& o) {
  auto policy = scheduler::ConfigFor(o.policy);
  if (!policy.ok()) return Status::InvalidArgument("--policy: " + policy.status().message());
  scheduler::SchedulerConfig config = *policy;
  if (scheduler::IsOracle(config.policy)) {
    return Status::InvalidArgument(fmt::format(
        "--policy: {} is a reference for `cohort sim run` only: it reads the true run time of "
        "each job, which a real cluster does not know; use default, fifo or las",
        o.policy));
  }
  if (o.no_backfill) config.backfill = false;
  if (!o.default_runtime.empty()) {
    auto d = ParseDuration(o.default_runtime);
    if (!d.ok()) return Status::InvalidArgument("--default-runtime: " + d.status().message());
    config.default_runtime = *d;
  }
  config.priority_preemption = !o.no_priority_preemption;
  config.quota_reclaim = !o.no_quota_reclaim;
  auto min = ParseDuration(o.preemption_min_runtime);
  if (!min.ok())
    return Status::InvalidArgument("--preemption-min-runtime: " + min.status().message());
  config.min_runtime_before_preemption = *min;
  if (Status s = scheduler::ApplyTuning(o.tuning, config); !s.ok()) return s;
  return config;
}

// Where the build writes the dashboard, beside bin/: build/bin/cohortd serves build/web.
std::string DefaultWebDir() {
  std::filesystem::path self = OwnExecutable();
  if (self.empty()) return {};
  return (self.parent_path().parent_path() / "web").string();
}

}  // namespace

int RunMaster(const MasterOptions& o) {
  if (!SetUpLogging(o.log_level)) {
    fmt::print(stderr, "cohortd master: --log-level: \"{}\" is not a level\n", o.log_level);
    return 2;
  }
  size_t colon = o.listen.rfind(':');
  std::optional<int> port;
  if (colon != std::string::npos) port = ParseInt(o.listen.substr(colon + 1), 0, 65535);
  if (!port) {
    fmt::print(stderr, "cohortd master: --listen: \"{}\" is not HOST:PORT, e.g. 127.0.0.1:7420\n",
               o.listen);
    return 2;
  }
  auto node_timeout = ParseDuration(o.node_timeout);
  if (!node_timeout.ok()) {
    fmt::print(stderr, "cohortd master: --node-timeout: {}\n", node_timeout.status().message());
    return 2;
  }
  auto log_limit = ParseByteSize(o.log_limit);
  if (!log_limit.ok() || *log_limit < kMinLogLimit) {
    fmt::print(stderr, "cohortd master: --log-limit: {}\n",
               log_limit.ok() ? "must be at least 64Ki" : log_limit.status().message());
    return 2;
  }
  auto state_disk_reserve = ParseByteSize(o.state_disk_reserve);
  if (!state_disk_reserve.ok()) {
    fmt::print(stderr, "cohortd master: --state-disk-reserve: {}\n",
               state_disk_reserve.status().message());
    return 2;
  }
  auto store_quota = ParseByteSize(o.store_quota);
  if (!store_quota.ok()) {
    fmt::print(stderr, "cohortd master: --store-quota-per-team: {}\n",
               store_quota.status().message());
    return 2;
  }
  auto audit_retention = ParseDuration(o.audit_retention);
  if (!audit_retention.ok() || *audit_retention < std::chrono::hours(1)) {
    fmt::print(stderr, "cohortd master: --audit-retention: {}\n",
               audit_retention.ok() ? "must be at least 1h" : audit_retention.status().message());
    return 2;
  }
  auto idle_gpu_after = ParseDuration(o.idle_gpu_after);
  auto advice_window = ParseDuration(o.advice_window);
  for (auto [flag, value] : {std::pair{"--idle-gpu-after", &idle_gpu_after},
                             std::pair{"--advice-window", &advice_window}}) {
    if (!value->ok() || **value < std::chrono::seconds(1)) {
      fmt::print(stderr, "cohortd master: {}: {}\n", flag,
                 value->ok() ? "must be at least 1s" : value->status().message());
      return 2;
    }
  }
  auto max_idle_timeout = ParseDuration(o.max_idle_timeout);
  auto session_warning = ParseDuration(o.session_warning);
  for (auto [flag, value] : {std::pair{"--max-idle-timeout", &max_idle_timeout},
                             std::pair{"--session-warning", &session_warning}}) {
    if (!value->ok() || **value < std::chrono::seconds(1) || **value > kMaxSessionIdleTimeout) {
      fmt::print(stderr, "cohortd master: {}: {}\n", flag,
                 value->ok() ? "must be from 1s to 7d" : value->status().message());
      return 2;
    }
  }
  std::optional<int> interactive_priority = ParsePriorityName(o.interactive_priority);
  if (!interactive_priority) {
    interactive_priority = ParseInt(o.interactive_priority, kMinPriority, kMaxPriority);
  }
  if (!interactive_priority) {
    fmt::print(stderr,
               "cohortd master: --interactive-priority: \"{}\" is not a priority; use low, "
               "normal, high or an integer from {} to {}\n",
               o.interactive_priority, kMinPriority, kMaxPriority);
    return 2;
  }
  auto sign_in_code_ttl = ParseDuration(o.sign_in_code_ttl);
  auto session_ttl = ParseDuration(o.session_ttl);
  for (auto [flag, value, most] :
       {std::tuple{"--sign-in-code-ttl", &sign_in_code_ttl, Duration(std::chrono::hours(1))},
        std::tuple{"--session-ttl", &session_ttl, Duration(std::chrono::hours(24 * 30))}}) {
    if (!value->ok() || **value < std::chrono::seconds(1) || **value > most) {
      fmt::print(stderr, "cohortd master: {}: {}\n", flag,
                 value->ok() ? fmt::format("must be from 1s to {}", FormatDuration(most))
                             : value->status().message());
      return 2;
    }
  }
  auto scheduling = SchedulerConfigFrom(o);
  if (!scheduling.ok()) {
    fmt::print(stderr, "cohortd master: {}\n", scheduling.status().message());
    return 2;
  }
  if (o.tls_cert.empty() != o.tls_key.empty()) {
    fmt::print(stderr,
               "cohortd master: --tls-cert and --tls-key go together: both for HTTPS, or "
               "neither for plain HTTP\n");
    return 2;
  }
  std::shared_ptr<boost::asio::ssl::context> tls;
  if (!o.tls_cert.empty()) {
    auto context = tls::NewServerContext(o.tls_cert, o.tls_key);
    if (!context.ok()) {
      fmt::print(stderr, "cohortd master: {}\n", context.status().message());
      return 2;
    }
    tls = *context;
  }
  master::MasterConfig config;
  config.data_dir = o.data_dir.empty() ? DefaultDataDir("master") : o.data_dir;
  config.storage_root = o.storage_root;
  config.node_timeout = *node_timeout;
  config.unknown_team_fallback = o.unknown_team_fallback;
  config.incremental_above = o.incremental_above;
  config.max_queued_per_user = o.max_queued_per_user;
  config.max_queued_per_team = o.max_queued_per_team;
  config.log_limit = *log_limit;
  config.state_disk_reserve = static_cast<uint64_t>(*state_disk_reserve);
  config.audit_retention = *audit_retention;
  config.advisor.idle_after = *idle_gpu_after;
  config.advisor.window = *advice_window;
  config.reclaim_idle_gpus = o.reclaim_idle_gpus;
  config.sessions.max_idle_timeout = *max_idle_timeout;
  config.sessions.warning = *session_warning;
  config.sessions.priority = *interactive_priority;
  config.stage_datasets = !o.no_dataset_staging;
  config.store_quota_per_team = *store_quota;
  const bool s3 = o.store.rfind("s3://", 0) == 0;
  if (s3 != !o.store_config.empty()) {
    fmt::print(stderr, "cohortd master: {}\n",
               s3 ? "--store s3://... needs --store-config FILE (endpoint, region, access_key, "
                    "secret_key; mode 0600)"
                  : "--store-config goes with --store s3://BUCKET/PREFIX only");
    return 2;
  }
  if (!s3) {
    // Absolute: agents, started elsewhere, write to it by this path.
    std::error_code ec;
    config.store.directory =
        std::filesystem::absolute(o.store.empty() ? master::StoreDirOf(config) : o.store, ec)
            .lexically_normal()
            .string();
  }
  // An earlier cluster whose database is gone or damaged is never silently replaced by a new one.
  if (Status s = CheckDataDirectory(config.data_dir, master::StorageRootOf(config), o.init);
      !s.ok()) {
    fmt::print(stderr, "cohortd master: {}\n", s.message());
    return 1;
  }
  // Everything the master acts on is opened here, at the edge, and handed to it (MasterDeps).
  for (const std::string& dir : {config.data_dir, master::StorageRootOf(config)}) {
    std::error_code ec;
    std::filesystem::create_directories(dir, ec);
    if (ec) {
      fmt::print(stderr, "cohortd master: cannot create {}: {}\n", dir, ec.message());
      return 1;
    }
  }
  for (const auto& [names, insecure] :
       {std::pair{&o.image_registries, false}, std::pair{&o.insecure_image_registries, true}}) {
    for (const std::string& host : *names) {
      if (Status valid = ValidateImageRegistry(host); !valid.ok()) {
        fmt::print(stderr, "cohortd master: --{}image-registry: {}\n", insecure ? "insecure-" : "",
                   valid.message());
        return 2;
      }
      config.image_registries.push_back(ImageRegistry{host, insecure});
    }
  }
  if (auto key = JobCredentialKey(config.data_dir); key.ok()) {
    config.job_credential_key = std::move(*key);
  } else {
    fmt::print(stderr, "cohortd master: {}\n", key.status().message());
    return 1;
  }
  auto store = state::OpenSqliteStateStore(config.data_dir + "/cohort.db");
  if (!store.ok()) {
    fmt::print(stderr, "cohortd master: {}\n", store.status().ToString());
    return 1;
  }
  auto metric_store = state::OpenSqliteMetricStore(config.data_dir + "/metrics.db");
  if (!metric_store.ok()) {
    fmt::print(stderr, "cohortd master: {}\n", metric_store.status().ToString());
    return 1;
  }
  std::unique_ptr<store::StoreAccessIssuer> store_access;
  if (s3) {
    auto location = store::ParseS3Location(o.store);
    auto connection = location.ok() ? store::LoadS3Connection(o.store_config)
                                    : StatusOr<store::S3Connection>(location.status());
    if (!connection.ok()) {
      fmt::print(stderr, "cohortd master: --store: {}\n", connection.status().message());
      return 2;
    }
    config.store = store::S3Access(*connection, *location);
    // With a role, each job's agents get keys for its own prefix; without, the master's own
    // (docs/security.md says what they reach).
    if (!connection->role_arn.empty()) {
      store_access = std::make_unique<store::S3AccessIssuer>(*connection, *location);
    }
  }
  auto objects = store::OpenStore(config.store);
  if (objects.ok()) {
    // A misconfigured store (no such bucket, keys refused, nothing listening) is said now, not
    // when the first job ends.
    if (auto page = (*objects)->List("", "", 1); !page.ok()) objects = page.status();
  }
  if (!objects.ok()) {
    fmt::print(stderr, "cohortd master: --store {}: {}\n", o.store.empty() ? "(default)" : o.store,
               objects.status().message());
    return 1;
  }
  boost::asio::io_context ioc(1);
  RealClock clock;
  api::AsioEventLoop loop(ioc);
  auto master = master::Master::Create(
      config,
      master::MasterDeps{std::move(store).value(), std::move(metric_store).value(),
                         scheduler::NewScheduler(*scheduling), StatDiskSpace(config.data_dir),
                         std::move(objects).value(), std::move(store_access)},
      clock, loop);
  if (!master.ok()) {
    fmt::print(stderr, "cohortd master: {}\n", master.status().ToString());
    return 1;
  }
  std::string admin_user = o.admin_user.empty() ? ProcessUserName() : o.admin_user;
  if (Status s = ValidateUserName(admin_user, "--admin-user"); !s.ok()) {
    fmt::print(stderr, "cohortd master: {}\n", s.message());
    return 2;
  }
  if (Status s = BootstrapAccess(**master, config.data_dir, admin_user); !s.ok()) {
    fmt::print(stderr, "cohortd master: setting up access: {}\n", s.ToString());
    return 1;
  }
  api::HttpLimits limits;
  const auto open_files = static_cast<size_t>(RaiseOpenFileLimit());
  limits.max_connections = o.max_connections > 0
                               ? o.max_connections
                               : std::clamp(open_files - std::min(open_files, kReservedFiles),
                                            size_t{16}, kDefaultMaxConnections);
  if (o.max_connections_per_address >= 0) {
    limits.max_connections_per_address = static_cast<size_t>(o.max_connections_per_address);
  }
  api::ApiServer server(ioc, **master, limits);
  if (tls) server.UseTls(tls);
  auth::SignInCodeLimits code_limits;
  code_limits.lifetime = *sign_in_code_ttl;
  auth::SessionLimits session_limits;
  session_limits.lifetime = *session_ttl;
  server.SetSignInLimits(code_limits, session_limits);
  std::string web_dir = o.web_dir.empty() ? DefaultWebDir() : o.web_dir;
  if (web_dir != "none") {
    server.ServeWebFrom(web_dir);
    if (!std::filesystem::exists(web_dir + "/index.html")) {
      spdlog::warn("no dashboard in {} (built with npm; see docs/observability.md)", web_dir);
    }
  }
  // Usage reports read through a connection of their own, on a thread of their own.
  auto report_store = state::OpenSqliteStateStore(config.data_dir + "/cohort.db");
  if (!report_store.ok()) {
    fmt::print(stderr, "cohortd master: {}\n", report_store.status().ToString());
    return 1;
  }
  (*master)->usage().StartReader(
      std::move(report_store).value(),
      [&ioc](std::function<void()> work) { boost::asio::post(ioc, std::move(work)); });
  Status listening = server.Listen(o.listen.substr(0, colon), *port);
  if (!listening.ok()) {
    fmt::print(stderr, "cohortd master: {}\n", listening.message());
    return 1;
  }
  std::string url =
      fmt::format("{}://{}:{}", tls ? "https" : "http", o.listen.substr(0, colon), server.port());
  spdlog::info("cohortd master {} listening on {} (data in {}; at most {} connections)",
               COHORT_VERSION, url, config.data_dir, limits.max_connections);
  if (!o.url_file.empty()) {
    if (Status s = WriteFileAtomically(o.url_file, url + "\n"); !s.ok()) {
      fmt::print(stderr, "cohortd master: cannot write --url-file: {}\n", s.message());
      return 1;
    }
  }
  boost::asio::signal_set signals(ioc, SIGINT, SIGTERM);
  signals.async_wait([&](const boost::system::error_code& ec, int sig) {
    if (ec) return;
    spdlog::info("signal {}: shutting down", sig);
    server.Stop();
    ioc.stop();
  });
  ioc.run();
  return 0;
}

}  // namespace cohort::cohortd
