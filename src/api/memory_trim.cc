#include "api/memory_trim.h"

#include <malloc.h>

namespace cohort::api {

MemoryTrimmer::MemoryTrimmer(boost::asio::io_context& ioc, std::chrono::milliseconds interval)
    : timer_(ioc), interval_(interval) {}

void MemoryTrimmer::Request() {
  if (pending_) return;
  auto now = std::chrono::steady_clock::now();
  if (now - last_ >= interval_) return Trim();
  pending_ = true;
  timer_.expires_at(last_ + interval_);
  timer_.async_wait([self = shared_from_this()](const boost::system::error_code& ec) {
    self->pending_ = false;
    if (!ec) self->Trim();
  });
}

void MemoryTrimmer::Trim() {
  ::malloc_trim(0);
  last_ = std::chrono::steady_clock::now();
  ++trims_;
}

}  // namespace cohort::api
