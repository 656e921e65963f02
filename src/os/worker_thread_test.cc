#include "os/worker_thread.h"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <future>
#include <vector>

namespace cohort {
namespace {

TEST(WorkerThread, RunsWorkInOrderOffTheCallersThread) {
  WorkerThread worker(WorkerThread::AtStop::kRunQueued);
  std::vector<int> order;
  std::promise<std::thread::id> ran_on;
  for (int i = 0; i < 100; ++i) worker.Post([&order, i] { order.push_back(i); });
  worker.Post([&] { ran_on.set_value(std::this_thread::get_id()); });
  EXPECT_NE(ran_on.get_future().get(), std::this_thread::get_id());
  worker.Stop();
  ASSERT_EQ(order.size(), 100u);
  for (int i = 0; i < 100; ++i) EXPECT_EQ(order[static_cast<size_t>(i)], i);
}

// A writer's queue is work the callers were promised: all of it runs before the thread ends.
TEST(WorkerThread, AWriterFinishesItsQueueWhenStopped) {
  std::atomic<int> ran = 0;
  std::promise<void> release;
  std::shared_future<void> gate = release.get_future().share();
  {
    WorkerThread worker(WorkerThread::AtStop::kRunQueued);
    worker.Post([gate] { gate.wait(); });
    for (int i = 0; i < 10; ++i) worker.Post([&] { ++ran; });
    release.set_value();
  }  // the destructor stops it
  EXPECT_EQ(ran, 10);
}

// A reader's queued requests have no one left to answer: they are dropped, the running one ends.
TEST(WorkerThread, AReaderDropsItsQueueWhenStopped) {
  std::atomic<int> ran = 0;
  std::promise<void> started;
  WorkerThread worker(WorkerThread::AtStop::kDropQueued);
  worker.Post([&] {
    started.set_value();
    // Long enough for Stop below to come while this runs.
    std::this_thread::sleep_for(std::chrono::milliseconds(300));
    ++ran;
  });
  for (int i = 0; i < 10; ++i) worker.Post([&] { ++ran; });
  started.get_future().wait();
  worker.Stop();
  EXPECT_EQ(ran, 1) << "only the work that was running when Stop came";
  worker.Post([&] { ++ran; });
  EXPECT_EQ(ran, 1) << "work posted after Stop never runs";
}

}  // namespace
}  // namespace cohort
