// A job's outputs in the object store (docs/data.md, "Outputs"): where they go, how the agent
// that uploads them reaches the store, whether the job's team has room for them, and where each
// upload stands, kept with the job (Job::artifacts) and in its events.
//
// The first task of a job (rank 0) carries the key of its outputs and the store's access in its
// launch; once it has ended (and the job's GPUs are free), its agent lists the job's output
// directory and reports the upload as waiting. The master then allows it if the team's quota
// (--store-quota-per-team) holds the job's outputs with those of its other jobs, or refuses it
// with the reason, and records its progress from each report until it is stored or failed;
// then the agent forgets it.
#pragma once

#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "common/status.h"
#include "master/job_book.h"
#include "master/master_config.h"
#include "model/agent_protocol.h"
#include "model/store_access.h"
#include "model/upload_progress.h"
#include "store/access_issuer.h"

namespace cohort::master {

// What the store's access takes in a task's launch, at most (an S3 endpoint, bucket, prefix, keys
// and an STS session token are well under it), counted in a node's desired state bound.
inline constexpr int64_t kLaunchStoreAccessBytes = 4096;
// What a job's datasets and code take in each of its tasks' launches, at most (names, pinned
// references, manifest keys), counted in the same bound.
int64_t LaunchDataBytes(const JobSpec& spec);

// The master's word on one report's uploads, for the answer to it.
struct UploadVerdicts {
  std::map<std::string, StoreAccess> allow;
  std::map<std::string, std::string> refuse;
  std::vector<std::string> forget;

  void AddTo(DesiredState& answer) const;
};

class Artifacts {
 public:
  // `access`: how agents reach the store for a job's keys; null: MasterConfig::store (or
  // <data_dir>/store) for every job.
  Artifacts(const MasterConfig& config, JobBook& jobs,
            std::unique_ptr<store::StoreAccessIssuer> access);

  // The key prefix of a job's outputs: "jobs/7/outputs".
  static std::string OutputsKey(JobId id);
  // The key prefix of a job's checkpoints between attempts: "jobs/7/checkpoints".
  static std::string CheckpointsKey(JobId id);
  // The keys of everything of a job's in the store: "jobs/7".
  static std::string JobKey(JobId id);
  // What `job`'s agents may reach in the store: its own keys, and to read only, its datasets'
  // manifests, its code's and the chunks of both.
  static store::AccessScope ScopeOf(const Job& job);
  // The datasets a task of `job` sees, as its launch names them.
  static std::vector<TaskDataset> DatasetsOf(const Job& job);
  // How an agent reaches the store for ScopeOf(job), or nothing while it is being issued
  // (store/access_issuer.h).
  std::optional<StoreAccess> AccessFor(const Job& job) { return access_->For(ScopeOf(job)); }
  // Whether this task of the job uploads the job's outputs once it ends: its first task.
  static bool Uploads(const Task& task) { return task.rank == 0; }

  // Applies what the agent of `node` reports of its uploads to their jobs, writing those that
  // changed. An agent speaks only for tasks that were placed on its node.
  StatusOr<UploadVerdicts> Apply(const std::string& node,
                                 const std::vector<UploadProgress>& uploads);

  // The bytes that the outputs of `team`'s jobs take in the store, or will once uploads that
  // were allowed end.
  int64_t BytesOf(const std::string& team) const;

 private:
  const MasterConfig& config_;
  JobBook& jobs_;
  std::unique_ptr<store::StoreAccessIssuer> access_;
};

}  // namespace cohort::master
