// The master: the parts wired together, loading the durable state, and the tick.
#include "master/master.h"

#include "auth/job_credential.h"

#include <spdlog/spdlog.h>

#include <algorithm>

namespace cohort::master {

namespace {

MasterConfig WithCredentialKey(MasterConfig config) {
  if (config.job_credential_key.empty()) {
    auto key = auth::MintJobCredentialKey();
    COHORT_CHECK(key.ok());
    config.job_credential_key = std::move(*key);
  }
  return config;
}

}  // namespace

Master::Master(MasterConfig config, MasterDeps deps, const Clock& clock, EventLoop& loop)
    : config_(WithCredentialKey(std::move(config))),
      clock_(clock),
      loop_(loop),
      logs_(config_.data_dir + "/logs", LogLimits::For(config_.log_limit)),
      metrics_(std::make_unique<MetricIngest>(std::move(deps.metrics))),
      store_(std::move(deps.store)),
      objects_(std::move(deps.objects)),
      journal_(*store_, config_.fail_stop,
               StateDisk(std::move(deps.state_disk), config_.state_disk_reserve)),
      accounts_(*store_, clock_),
      secrets_(*store_, clock_),
      jobs_(journal_, clock_, config_.history_max_keys),
      scheduling_(jobs_, journal_, clock_, loop_, std::move(deps.scheduler),
                  config_.incremental_above),
      teams_(*store_, jobs_, secrets_, scheduling_),
      task_secrets_(secrets_, jobs_),
      lifecycle_(config_, jobs_, nodes_, scheduling_, journal_, teams_, task_secrets_, clock_),
      artifacts_(config_, jobs_, std::move(deps.store_access)),
      reconciler_(config_, jobs_, nodes_, scheduling_, lifecycle_, journal_, accounts_,
                  task_secrets_, artifacts_, clock_),
      advice_(config_, jobs_, reconciler_.resources(), lifecycle_, clock_),
      idle_sessions_(config_.sessions, jobs_, reconciler_.resources(), lifecycle_),
      sweeps_(jobs_, lifecycle_, journal_, metrics_->store(), clock_, loop_),
      audit_(*store_, clock_, config_.audit_retention),
      usage_(*store_, clock_) {
  config_.storage_root = StorageRootOf(config_);
  scheduling_.SetDecisionTaker(&lifecycle_);
  scheduling_.SetDatasetStaging(config_.stage_datasets);
  jobs_.SetTrialEndListener([this](const Job& job) { sweeps_.TrialJobEnded(job); });
  jobs_.SetDependencyEndListener([this](const Job& job) { lifecycle_.DependencyEnded(job); });
  // Warnings to sessions' terminals go straight to whoever listens (the API's relays).
  auto notify = [this](JobId id, const std::string& text) {
    if (MasterListener* listener = journal_.listener()) listener->OnSessionNotice(id, text);
  };
  lifecycle_.SetSessionNotify(notify);
  idle_sessions_.SetNotify(notify);
}

Master::~Master() = default;

StatusOr<std::unique_ptr<Master>> Master::Create(MasterConfig config, MasterDeps deps,
                                                 const Clock& clock, EventLoop& loop) {
  if (!deps.store || !deps.metrics || !deps.scheduler || !deps.objects) {
    return Status::InvalidArgument(
        "the master needs a state store, a metric store, a scheduler and an object store");
  }
  std::unique_ptr<Master> m(new Master(std::move(config), std::move(deps), clock, loop));
  // Before anything is written: a master restarted on a full disk starts read-only.
  m->journal_.disk().Check();
  m->read_only_at_last_tick_ = m->journal_.read_only().has_value();
  COHORT_RETURN_IF_ERROR(m->Load());
  m->TickAgainLater();
  return m;
}

Status Master::Load() {
  COHORT_RETURN_IF_ERROR(accounts_.Load());
  COHORT_RETURN_IF_ERROR(secrets_.Load());
  COHORT_ASSIGN_OR_RETURN(uint64_t max_version, jobs_.Load());
  for (JobId id : jobs_.pending()) {
    scheduling_.NoteBackoff(jobs_.At(id));
    scheduling_.NoteExclusion(jobs_.At(id));
  }
  COHORT_RETURN_IF_ERROR(teams_.Load());
  // Versions must keep rising across restarts, so that an agent's applied version from before
  // the restart never looks newer than what this master hands out.
  max_version = std::max(max_version, static_cast<uint64_t>(ToMicros(clock_.Now())));
  COHORT_RETURN_IF_ERROR(reconciler_.Load(max_version));
  for (JobId id : jobs_.active()) scheduling_.RestoreHolding(jobs_.At(id));
  // After the jobs: a sweep reads its trials' jobs, and may submit the next ones.
  COHORT_RETURN_IF_ERROR(sweeps_.Load());
  // A dependency that ended while the master was away (or read-only): its waiting jobs.
  if (!journal_.read_only()) lifecycle_.CheckDependencies();
  spdlog::info("state loaded: {} jobs ({} pending, {} active), {} nodes", jobs_.size(),
               jobs_.pending().size(), jobs_.active().size(), nodes_.size());
  if (!jobs_.pending().empty()) scheduling_.RequestSchedule();
  return Status::Ok();
}

void Master::TickAgainLater() {
  MonoTime due = clock_.Monotonic() + config_.tick_interval;
  loop_.RunAfter(config_.tick_interval, [this, due, alive = std::weak_ptr<bool>(alive_)] {
    if (!alive.lock()) return;
    // A tick this late means the master did not run in between (SIGSTOP, a frozen VM, a starved
    // CPU, a handler that held the loop): nodes are not judged on what it could not hear.
    if (Duration late = clock_.Monotonic() - due; late > kStalledAfter) {
      reconciler_.WasNotListening(late);
    }
    Tick();
    TickAgainLater();
  });
}

void Master::Tick() {
  journal_.disk().Check();
  const bool read_only = journal_.read_only().has_value();
  if (read_only_at_last_tick_ && !read_only) {
    // Writable again: what agents reported meanwhile comes with their next syncs; what waits
    // may start.
    scheduling_.RequestSchedule();
  }
  read_only_at_last_tick_ = read_only;
  // Read-only: nothing is judged, stopped or started, since none of it could be written.
  if (journal_.read_only()) return;
  Timestamp now = clock_.Now();
  // Outside the batch: a prune that fails (a full disk) changes nothing in memory and is tried
  // again later, and must not take the batch's job writes down with it.
  audit_.Prune(now);
  Journal::Batch batch(journal_);
  reconciler_.CheckTimeouts();
  advice_.Tick(now);
  idle_sessions_.Tick(now);
  lifecycle_.PreemptWarnedSessions(now);
  lifecycle_.StopOverdue(now);
  sweeps_.Tick();
  scheduling_.OnTick(now);
}

}  // namespace cohort::master
