#include "api/hand_run_loop.h"

namespace cohort::api {

size_t HandRunLoop::RunPosted() {
  size_t ran = 0;
  while (!queue_.empty()) {
    auto work = std::move(queue_.front());
    queue_.pop_front();
    work();
    ++ran;
  }
  return ran;
}

bool HandRunLoop::Settle(boost::asio::io_context& ioc, int max_rounds) {
  for (int round = 0; round < max_rounds; ++round) {
    bool worked = RunPosted() > 0;
    ioc.restart();
    if (ioc.poll() > 0) worked = true;
    if (!worked) return true;
  }
  return false;
}

}  // namespace cohort::api
