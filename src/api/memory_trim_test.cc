#include "api/memory_trim.h"

#include <gtest/gtest.h>

#include <thread>

namespace cohort::api {
namespace {

using namespace std::chrono_literals;

TEST(MemoryTrimmer, TrimsAtOnceThenAtMostOncePerInterval) {
  boost::asio::io_context ioc;
  auto trimmer = std::make_shared<MemoryTrimmer>(ioc, 200ms);
  trimmer->Request();
  EXPECT_EQ(trimmer->trims(), 1) << "the first request trims at once";
  for (int i = 0; i < 10; ++i) trimmer->Request();
  EXPECT_EQ(trimmer->trims(), 1) << "the rest wait for the interval";
  auto start = std::chrono::steady_clock::now();
  ioc.run();  // until the one pending trim has run
  EXPECT_EQ(trimmer->trims(), 2) << "ten requests in the interval make one trim";
  EXPECT_GE(std::chrono::steady_clock::now() - start, 150ms);
  std::this_thread::sleep_for(250ms);
  trimmer->Request();
  EXPECT_EQ(trimmer->trims(), 3) << "after a quiet interval, at once again";
}

}  // namespace
}  // namespace cohort::api
