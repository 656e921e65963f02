// Where the master's deferred work runs: the one event-loop thread it lives on. The master posts
// a scheduling pass there after a change (many changes, one pass) and keeps its own periodic
// tick there (silent nodes, max_runtime, passes put off). The real loop is Asio's
// (api/asio_event_loop.h); tests use a queue they run by hand.
#pragma once

#include <functional>

#include "common/time.h"

namespace cohort::master {

class EventLoop {
 public:
  virtual ~EventLoop() = default;
  // Runs `work` later on the loop's thread, never inside the call.
  virtual void Post(std::function<void()> work) = 0;
  // Runs `work` on the loop's thread once `delay` has passed.
  virtual void RunAfter(Duration delay, std::function<void()> work) = 0;
};

}  // namespace cohort::master
