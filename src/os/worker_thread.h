// One thread that runs posted work in order, off the caller's thread: the master's log writer,
// metric writer and usage reports, which must not block its event loop. Each owner keeps its
// own bound on what it queues and brings results back to its own thread (e.g. by posting them
// to the event loop); this only owns the thread, the queue and an orderly stop.
#pragma once

#include <condition_variable>
#include <deque>
#include <functional>
#include <mutex>
#include <thread>

namespace cohort {

class WorkerThread {
 public:
  // What Stop does with work that has not begun: a writer finishes what it has taken on, a
  // reader whose callers are gone drops it.
  enum class AtStop { kRunQueued, kDropQueued };

  explicit WorkerThread(AtStop at_stop);
  ~WorkerThread();  // Stop()
  WorkerThread(const WorkerThread&) = delete;
  WorkerThread& operator=(const WorkerThread&) = delete;

  // Runs `work` on the thread after everything posted before it. After Stop, it is dropped.
  void Post(std::function<void()> work);
  // Waits for the work that is running (and, with kRunQueued, for the queue) and ends the
  // thread. Idempotent; not to be called from the thread itself.
  void Stop();

 private:
  void Run();

  const AtStop at_stop_;
  std::mutex mu_;
  std::condition_variable wake_;
  std::deque<std::function<void()>> queue_;
  bool stopping_ = false;
  std::thread thread_;  // last: it starts once the rest is set up
};

}  // namespace cohort
