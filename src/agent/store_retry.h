// How a task's supervisor waits for the store before its task starts (checkpoints to restore,
// datasets and code to fetch): a store out of reach is tried again, backing off from 1 s to
// 30 s, until a limit; what trying again cannot change (damaged content, a link on the way, a
// bad request, something that is not there) ends it at once.
#pragma once

#include <functional>

#include "common/status.h"
#include "common/time.h"

namespace cohort::agent {

// Runs `attempt` until it returns OK or a failure no retry changes, or until `limit` has passed
// (then its last failure). `waiting` is told of the first failure that is tried again. Between
// tries, `stopped` (may be empty) is asked every 100 ms: once it says so, OK, and the caller
// asks `stopped` itself.
Status RetryWhileStoreDown(const Clock& clock, Duration limit, const std::function<bool()>& stopped,
                           const std::function<void(const Status&)>& waiting,
                           const std::function<Status()>& attempt);

}  // namespace cohort::agent
