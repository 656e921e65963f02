#include "os/worker_thread.h"

namespace cohort {

WorkerThread::WorkerThread(AtStop at_stop) : at_stop_(at_stop), thread_([this] { Run(); }) {}

WorkerThread::~WorkerThread() { Stop(); }

void WorkerThread::Post(std::function<void()> work) {
  {
    std::lock_guard lock(mu_);
    if (stopping_) return;
    queue_.push_back(std::move(work));
  }
  wake_.notify_one();
}

void WorkerThread::Stop() {
  {
    std::lock_guard lock(mu_);
    stopping_ = true;
    if (at_stop_ == AtStop::kDropQueued) queue_.clear();
  }
  wake_.notify_all();
  if (thread_.joinable()) thread_.join();
}

void WorkerThread::Run() {
  for (;;) {
    std::function<void()> work;
    {
      std::unique_lock lock(mu_);
      wake_.wait(lock, [&] { return stopping_ || !queue_.empty(); });
      if (queue_.empty()) return;  // stopping, with nothing (left) to run
      work = std::move(queue_.front());
      queue_.pop_front();
    }
    work();
  }
}

}  // namespace cohort
