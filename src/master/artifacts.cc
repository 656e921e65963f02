#include "master/artifacts.h"

#include "store/dataset_layout.h"

#include <fmt/format.h>

#include "common/units.h"

namespace cohort::master {
namespace {

bool Ended(UploadState s) { return s == UploadState::kStored || s == UploadState::kFailed; }

// Whether `p` holds bytes of the team's quota: allowed, or stored.
bool Counts(const UploadProgress& p) {
  return p.state == UploadState::kUploading || p.state == UploadState::kStored;
}

// "300 bytes", "2.9Ki".
std::string Bytes(int64_t n) {
  return n < 1024 ? fmt::format("{} byte{}", n, n == 1 ? "" : "s") : FormatByteSizeApprox(n);
}

// " (2 links or special files left out)", or nothing.
std::string LeftOut(int64_t n) {
  return n ? fmt::format(" ({} link{} or special file{} left out)", n, n == 1 ? "" : "s",
                         n == 1 ? "" : "s")
           : "";
}

std::string Files(int64_t n) { return fmt::format("{} file{}", n, n == 1 ? "" : "s"); }

}  // namespace

void UploadVerdicts::AddTo(DesiredState& answer) const {
  answer.allow_uploads = allow;
  answer.refuse_uploads = refuse;
  answer.forget_uploads = forget;
}

Artifacts::Artifacts(const MasterConfig& config, JobBook& jobs,
                     std::unique_ptr<store::StoreAccessIssuer> access)
    : config_(config), jobs_(jobs), access_(std::move(access)) {
  if (!access_) {
    StoreAccess fixed = config_.store;
    if (fixed.empty()) fixed.directory = StoreDirOf(config_);
    access_ = store::FixedStoreAccess(std::move(fixed));
  }
}

std::string Artifacts::OutputsKey(JobId id) { return JobKey(id) + "/outputs"; }

std::string Artifacts::CheckpointsKey(JobId id) { return JobKey(id) + "/checkpoints"; }

std::string Artifacts::JobKey(JobId id) { return fmt::format("jobs/{}", id); }

std::vector<TaskDataset> Artifacts::DatasetsOf(const Job& job) {
  std::vector<TaskDataset> out;
  for (const DatasetRef& ref : job.spec.datasets) {
    // Pinned when the job was submitted (api/dataset_refs.h): team and version are set.
    out.push_back(TaskDataset{ref.name, FormatDatasetRef(ref),
                              store::ManifestKey(ref.team, ref.name, ref.version.value_or(0))});
  }
  return out;
}

store::AccessScope Artifacts::ScopeOf(const Job& job) {
  store::AccessScope scope(JobKey(job.id));
  if (job.spec.datasets.empty() && job.spec.context.empty()) return scope;
  scope.reads.push_back(std::string(store::kBlobsPrefix));
  for (const TaskDataset& d : DatasetsOf(job)) scope.reads.push_back(d.manifest_key);
  if (!job.spec.context.empty()) scope.reads.push_back(store::ContextKey(job.spec.context));
  return scope;
}

int64_t LaunchDataBytes(const JobSpec& spec) {
  // Each dataset: its name, its reference and its manifest key, each well under 256 bytes, and
  // the JSON around them; the code's key is one more.
  constexpr int64_t kPerDataset = 1024;
  return static_cast<int64_t>(spec.datasets.size()) * kPerDataset +
         (spec.context.empty() ? 0 : 256);
}

int64_t Artifacts::BytesOf(const std::string& team) const {
  int64_t bytes = 0;
  for (const Job* job : jobs_.List({})) {
    if (job->spec.team == team && job->artifacts && Counts(*job->artifacts)) {
      bytes += job->artifacts->bytes_total;
    }
  }
  return bytes;
}

StatusOr<UploadVerdicts> Artifacts::Apply(const std::string& node,
                                          const std::vector<UploadProgress>& uploads) {
  UploadVerdicts verdicts;
  for (const UploadProgress& u : uploads) {
    auto id = ParseTaskId(u.id);
    Status placed = id.ok() ? jobs_.CheckTask(*id, node) : id.status();
    if (!placed.ok()) {
      // Not a task of this master's on this node (any more): nothing to record.
      if (u.state == UploadState::kWaiting) verdicts.refuse[u.id] = placed.message();
      if (Ended(u.state)) verdicts.forget.push_back(u.id);
      continue;
    }
    Job* job = jobs_.Find(id->job);
    const UploadProgress* recorded = job->artifacts ? &*job->artifacts : nullptr;
    if (recorded && recorded->id != u.id) {
      auto recorded_id = ParseTaskId(recorded->id);
      if (recorded_id.ok() && recorded_id->attempt > id->attempt) {
        // An earlier attempt's upload, after a later one began: the later one is the job's.
        if (u.state == UploadState::kWaiting) {
          verdicts.refuse[u.id] = "a later attempt's outputs replace these";
        }
        if (Ended(u.state)) verdicts.forget.push_back(u.id);
        continue;
      }
    }
    std::vector<JobEvent> events;
    UploadProgress next = u;
    if (u.state == UploadState::kWaiting) {
      if (recorded && recorded->id == u.id && recorded->state == UploadState::kFailed) {
        // Refused before, and the agent did not hear it (it restarted): refused again.
        verdicts.refuse[u.id] = recorded->reason;
        continue;
      }
      if (recorded && recorded->id == u.id && recorded->state != UploadState::kWaiting) {
        // Allowed before: its access is being issued, or the answer was lost.
        if (auto access = AccessFor(*job)) verdicts.allow[u.id] = *access;
        continue;
      }
      const std::string& team = job->spec.team;
      // A job's new outputs replace its earlier ones (the same keys): those are not counted.
      int64_t others = BytesOf(team) - (recorded && Counts(*recorded) ? recorded->bytes_total : 0);
      int64_t quota = config_.store_quota_per_team;
      if (quota > 0 && others + u.bytes_total > quota) {
        next.state = UploadState::kFailed;
        next.reason = fmt::format(
            "team {}'s store quota of {} cannot take these {} ({}): its other jobs' outputs "
            "take {} (an admin sets the quota with cohortd master --store-quota-per-team)",
            team, FormatByteSize(quota), Files(u.files_total), Bytes(u.bytes_total), Bytes(others));
        verdicts.refuse[u.id] = next.reason;
        events.push_back(jobs_.Event(*job, "artifacts", "outputs not stored: " + next.reason));
      } else {
        next.state = u.files_total == 0 ? UploadState::kStored : UploadState::kUploading;
        // Its bytes are the team's from now; the agent hears once the access is issued.
        if (auto access = AccessFor(*job)) verdicts.allow[u.id] = *access;
        events.push_back(
            jobs_.Event(*job, "artifacts",
                        fmt::format("uploading its outputs: {}, {}{}", Files(u.files_total),
                                    Bytes(u.bytes_total), LeftOut(u.files_skipped))));
      }
    } else if (Ended(u.state)) {
      verdicts.forget.push_back(u.id);
      if (recorded && recorded->id == u.id && recorded->state == u.state) continue;
      events.push_back(
          jobs_.Event(*job, "artifacts",
                      u.state == UploadState::kStored
                          ? fmt::format("outputs stored: {}, {}{}", Files(u.files_done),
                                        Bytes(u.bytes_done), LeftOut(u.files_skipped))
                          : "outputs not stored: " + u.reason));
    } else if (recorded && recorded->id == u.id && recorded->files_done == u.files_done &&
               recorded->reason == u.reason) {
      continue;  // uploading, and nothing moved since the last report
    }
    job->artifacts = std::move(next);
    COHORT_RETURN_IF_ERROR(jobs_.Persist(*job, std::move(events)));
  }
  return verdicts;
}

}  // namespace cohort::master
