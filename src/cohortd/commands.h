// The subcommands of cohortd, each in its own file.
#pragma once

#include <CLI/CLI.hpp>
#include <cstdint>
#include <string>
#include <vector>

#include "master/master_config.h"
#include "scheduler/policy_tuning.h"
#include "tls/certificates.h"

namespace cohort::cohortd {

struct MasterOptions {
  scheduler::PolicyTuning tuning;  // the default policy's knobs
  std::string data_dir;
  std::string listen = "127.0.0.1:7420";
  std::string storage_root;
  std::vector<std::string> image_registries;           // TLS-checked, the first the default
  std::vector<std::string> insecure_image_registries;  // plain HTTP or unchecked certificates
  std::string store;                // a directory or s3://BUCKET/PREFIX; empty: <data-dir>/store
  std::string store_config;         // an S3 store's connection file (0600)
  std::string store_quota = "1Ti";  // per team; "0": none
  std::string url_file;
  std::string node_timeout = "10s";
  std::string log_level = "info";
  std::string policy = "default";
  bool no_backfill = false;
  bool no_dataset_staging = false;
  std::string default_runtime;
  bool no_priority_preemption = false;
  bool no_quota_reclaim = false;
  std::string preemption_min_runtime = "1m";
  std::string unknown_team_fallback;
  size_t incremental_above = 1000;
  int max_queued_per_user = master::kDefaultMaxQueuedPerUser;
  int max_queued_per_team = master::kDefaultMaxQueuedPerTeam;
  size_t max_connections = 0;  // 0: kDefaultMaxConnections, or less if file descriptors are few
  int64_t max_connections_per_address = -1;  // -1: api::HttpLimits' default; 0: no cap
  std::string log_limit = "256Mi";
  std::string state_disk_reserve = "64Mi";
  std::string admin_user;  // empty: the Unix account the master runs as
  std::string tls_cert;    // both or neither: HTTPS instead of plain HTTP
  std::string tls_key;
  std::string audit_retention = "90d";
  std::string idle_gpu_after = "30m";
  // Interactive sessions (master/session_policy.h).
  std::string max_idle_timeout = "30m";
  std::string session_warning = "5m";
  std::string interactive_priority = "normal";
  std::string advice_window = "2m";
  std::string sign_in_code_ttl = "2m";  // the dashboard's one-time sign-in codes
  std::string session_ttl = "12h";      // the dashboard's sessions
  bool reclaim_idle_gpus = false;
  std::string web_dir;  // empty: <directory of this binary>/../web, where the build puts it
  bool init = false;    // start a new cluster over an earlier one's traces (its database lost)
};

// cohortd backup.
struct BackupOptions {
  std::string data_dir;  // the master's; empty: its default
  std::string to_dir;
};

struct AgentOptions {
  std::string master;
  std::string name;
  std::string address;
  std::string data_dir;
  int gpus = -1;  // -1: from NVML if present, else none
  std::string gpu_model = "Fake GPU";
  std::string gpu_memory = "80Gi";
  std::string nvml_library = "libnvidia-ml.so.1";
  std::string cpus;
  std::string memory;
  std::string ports = "30000-30999";
  std::vector<std::string> labels;
  std::string log_level = "info";
  std::string log_limit = "256Mi";
  std::string join_token_file;  // else $COHORT_JOIN_TOKEN
  std::string ca_file;          // trusted for an https:// master; empty: the system's CAs
  bool allow_root_tasks = false;
  std::string sample_interval = "5s";  // GPUs and tasks sampled this often
  // How a job's checkpoints go to the store (agent/checkpoint_sync.h).
  std::string checkpoint_prompt_bytes = "64Mi";
  std::string dataset_cache_size = "100Gi";
  std::string runtime = "auto";
  std::string oci_runtime = "auto";
  int64_t container_nproc = 4096;
  std::string gpu_device_prefix = "/dev/nvidia";
  std::string image_cache_size = "200Gi";
  std::string checkpoint_interval = "5m";
  std::string checkpoint_final_limit = "2m";
};

// cohortd cert ca | issue.
struct CertOptions {
  std::string dir;  // ca: where the CA goes
  bool force = false;
  std::string ca_dir;  // issue: the CA that signs
  std::string name;
  std::vector<std::string> hosts;
  std::string out_dir;
  int days = tls::kDefaultCertificateDays;
};

void AddMasterCommand(CLI::App& app, MasterOptions& options);
void AddAgentCommand(CLI::App& app, AgentOptions& options);
int RunMaster(const MasterOptions& options);
int RunAgent(const AgentOptions& options);
// Adds `cert` with its subcommands `ca` and `issue`; each runs from its own callback.
void AddCertCommand(CLI::App& app, CertOptions& options);
int RunTask(const std::string& task_dir);
void AddBackupCommand(CLI::App& app, BackupOptions& options);
int RunBackup(const BackupOptions& options);

// ~/.local/share/cohort/<what> (or $XDG_DATA_HOME/cohort/<what>).
std::string DefaultDataDir(const std::string& what);
// Sets up logging to stderr at `level`; false if the level is unknown.
bool SetUpLogging(const std::string& level);

}  // namespace cohort::cohortd
