// Idle sessions come back (docs/runtimes.md, "Idle sessions"): a running session whose GPUs have
// all been idle (the newest sample of none above SessionPolicy::busy_above) and which has had
// no input for its
// idle timeout is ended and its GPUs freed; WarningOf before that, it is warned in its terminal
// and its events. Input or a busy GPU after the warning lifts it.
//
// Input is what the master relays to a session's terminal (NoteInput); a GPU whose utilisation
// is unknown (declared fake GPUs) shows no use, so only input keeps such a session. A master
// that restarts counts a session as used at its start: a restart never ends a session early.
#pragma once

#include <functional>
#include <map>
#include <string>

#include "common/time.h"
#include "master/job_book.h"
#include "master/job_lifecycle.h"
#include "master/resource_history.h"
#include "master/session_policy.h"

namespace cohort::master {

class IdleSessions {
 public:
  // `notify` says a line to the people at a session's terminal.
  using Notify = std::function<void(JobId, const std::string&)>;

  IdleSessions(const SessionPolicy& policy, JobBook& jobs, const ResourceHistory& resources,
               JobLifecycle& lifecycle);
  void SetNotify(Notify notify) { notify_ = std::move(notify); }

  // Someone typed into session `id`'s terminal, or attached to it.
  void NoteInput(JobId id, Timestamp now);
  // Warns and ends the sessions idle long enough.
  void Tick(Timestamp now);
  // How long session `id` has been idle at `now`; nothing for a job that is no running session.
  std::optional<Duration> IdleFor(JobId id, Timestamp now) const;

 private:
  struct State {
    int attempt = 0;
    Timestamp used_at{};  // the last input, busy GPU sample, or the watch's start
    bool warned = false;
  };
  void Say(JobId id, const std::string& text) {
    if (notify_) notify_(id, text);
  }

  const SessionPolicy& policy_;
  JobBook& jobs_;
  const ResourceHistory& resources_;
  JobLifecycle& lifecycle_;
  Notify notify_;
  std::map<JobId, State> sessions_;  // running sessions only
};

}  // namespace cohort::master
