#include "agent/store_retry.h"

#include <algorithm>
#include <thread>

namespace cohort::agent {

Status RetryWhileStoreDown(const Clock& clock, Duration limit, const std::function<bool()>& stopped,
                           const std::function<void(const Status&)>& waiting,
                           const std::function<Status()>& attempt) {
  const MonoTime give_up = clock.Monotonic() + limit;
  Duration backoff = std::chrono::seconds(1);
  bool told = false;
  while (true) {
    Status last = attempt();
    if (last.ok()) return last;
    if (last.code() == StatusCode::kFailedPrecondition ||
        last.code() == StatusCode::kPermissionDenied ||
        last.code() == StatusCode::kInvalidArgument || last.code() == StatusCode::kNotFound) {
      return last;
    }
    if (clock.Monotonic() + backoff > give_up) return last;
    if (!told && waiting) waiting(last);
    told = true;
    for (Duration waited{}; waited < backoff; waited += std::chrono::milliseconds(100)) {
      if (stopped && stopped()) return Status::Ok();
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
    }
    backoff = std::min<Duration>(backoff * 2, std::chrono::seconds(30));
  }
}

}  // namespace cohort::agent
