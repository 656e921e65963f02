// Levels, the first stage of a pass: how much GPU time the running jobs have had, and what that
// lets a waiting job preempt. Under las a job's level is its least-attained-service queue, over
// every team; under the default policy, levels count within a team, and a running job that
// started promoted is protected for a while; srtf-oracle's counterpart is the GPU time a job
// truly has left. Levels change with time alone, so this stage also asks for the passes at which
// they will (a running job crossing a threshold, a protection ending, a waiting job promoted).
#pragma once

#include <map>
#include <string>

#include "model/plan.h"
#include "scheduler/pass_state.h"

namespace cohort::scheduler {

// What a waiting job may preempt for, beyond priority and quota reclaim.
struct LevelRights {
  bool by_level = false;    // running jobs of a later level (las, default)
  int level = 0;            // the job's own queue (las) or level (default)
  bool by_service = false;  // running jobs with more GPU time left (srtf-oracle)
  Duration service{};       // srtf-oracle: the job's own GPU time left
};

class Levels {
 public:
  explicit Levels(PassState& state) : s_(state) {}

  // Reads the running jobs' levels, and asks for a pass when one will change.
  void Read();

  // What `job` may preempt for by its level now. Under the default policy, only once it has
  // waited level_preemption_delay; until then it asks for a pass at that time.
  LevelRights RightsOf(const PendingJob& job);
  // Whether running job `r`, in least-attained-service queue `queue` now, is one that `job`
  // may preempt by `rights`.
  bool MayPreempt(const LevelRights& rights, const PendingJob& job, const RunningJob& r,
                  int queue) const;

  // What Read() found.
  int highest_las_queue() const { return highest_las_queue_; }
  const std::map<std::string, int>& highest_level() const { return highest_level_; }
  Duration most_service_left() const { return most_service_left_; }

 private:
  // Under the default policy, jobs of a team are in levels too, and may preempt their team's
  // jobs of a later level that are not protected.
  bool UsesLevels() const;
  void ReadRunningLevels();
  // Asks for a pass when the job, which has had `attained` GPU time, moves to a later queue:
  // waiting jobs of an earlier one may preempt it then.
  void RecheckAtNextThreshold(const RunningJob& r, Duration attained);
  void ReadServiceLeft();
  // A waiting job is promoted when it has waited long enough: its order changes then.
  void RecheckAtPromotions();

  PassState& s_;
  int highest_las_queue_ = 0;                 // of running jobs (policy las)
  std::map<std::string, int> highest_level_;  // of unprotected running jobs by team (default)
  Duration most_service_left_{};              // of running jobs (policy srtf-oracle)
};

}  // namespace cohort::scheduler
