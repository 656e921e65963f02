// Giving memory back to the system after large requests. glibc keeps freed heap memory for
// reuse: after a big request body has been parsed into many small objects, the master's
// resident size would stay that much higher for good. malloc_trim(0) returns the free pages;
// it walks the whole heap, so it runs at most once per interval however many large requests
// arrive (docs/performance.md has the figures).
#pragma once

#include <boost/asio/io_context.hpp>
#include <boost/asio/steady_timer.hpp>
#include <chrono>
#include <memory>

namespace cohort::api {

class MemoryTrimmer : public std::enable_shared_from_this<MemoryTrimmer> {
 public:
  MemoryTrimmer(boost::asio::io_context& ioc, std::chrono::milliseconds interval);
  // Trims now if the last trim is at least an interval ago, else once the interval has passed.
  void Request();
  int trims() const { return trims_; }

 private:
  void Trim();

  boost::asio::steady_timer timer_;
  std::chrono::milliseconds interval_;
  std::chrono::steady_clock::time_point last_{};
  bool pending_ = false;
  int trims_ = 0;
};

}  // namespace cohort::api
