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

bool HandRunLoop::SettleUntil(boost::asio::io_context& ioc, const std::function<bool()>& answered,
                              std::chrono::milliseconds max) {
  const auto deadline = std::chrono::steady_clock::now() + max;
  while (true) {
    if (!Settle(ioc)) return false;
    if (answered()) return true;
    ioc.restart();
    // Returns at once when nothing is under way (no work held): then nothing will answer.
    if (ioc.run_one_until(deadline) == 0) return answered();
  }
}

}  // namespace cohort::api
