// Long polls: requests parked under a key (a job, a node) until what they watch passes the
// version they have seen, or until their timeout. One list serves `GET /jobs/{id}?wait_version`
// and the agents' syncs.
//
// Runs on the io_context's one thread. `answer(key, responder)` sends the current state of
// `key`; it is called once per waiter, either from Wake or at the waiter's timeout.
#pragma once

#include <boost/asio/io_context.hpp>
#include <boost/asio/steady_timer.hpp>
#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <utility>
#include <vector>

#include "api/http_server.h"

namespace cohort::api {

template <typename Key>
class WaitList {
 public:
  using Answer = std::function<void(const Key&, Responder&)>;

  WaitList(boost::asio::io_context& ioc, Answer answer) : ioc_(ioc), answer_(std::move(answer)) {}
  WaitList(const WaitList&) = delete;
  WaitList& operator=(const WaitList&) = delete;

  // Parks `responder` until Wake(key, v) with v > `min_version`, or for `timeout`.
  void Wait(const Key& key, uint64_t min_version, std::chrono::milliseconds timeout,
            std::shared_ptr<Responder> responder) {
    auto waiter = std::make_shared<Waiter>(
        Waiter{min_version, std::move(responder), boost::asio::steady_timer(ioc_, timeout)});
    waiters_.emplace(key, waiter);
    waiter->timer.async_wait([this, key, waiter](boost::system::error_code ec) {
      if (ec) return;                    // cancelled: answered by Wake, or the list is stopping
      if (!Remove(key, waiter)) return;  // Wake answered it just before the timer fired
      answer_(key, *waiter->responder);
    });
  }

  // Answers every waiter of `key` that has seen less than `version`.
  void Wake(const Key& key, uint64_t version) {
    auto [begin, end] = waiters_.equal_range(key);
    std::vector<std::shared_ptr<Waiter>> ready;
    for (auto it = begin; it != end;) {
      if (version > it->second->min_version) {
        ready.push_back(it->second);
        it = waiters_.erase(it);
      } else {
        ++it;
      }
    }
    for (auto& waiter : ready) {
      waiter->timer.cancel();
      answer_(key, *waiter->responder);
    }
  }

  bool Has(const Key& key) const { return waiters_.count(key) > 0; }

  // Cancels every timer; the waiters are answered no more.
  void CancelAll() {
    for (auto& [key, waiter] : waiters_) waiter->timer.cancel();
    waiters_.clear();
  }

 private:
  struct Waiter {
    uint64_t min_version = 0;
    std::shared_ptr<Responder> responder;
    boost::asio::steady_timer timer;
  };

  bool Remove(const Key& key, const std::shared_ptr<Waiter>& waiter) {
    auto [begin, end] = waiters_.equal_range(key);
    for (auto it = begin; it != end; ++it) {
      if (it->second == waiter) {
        waiters_.erase(it);
        return true;
      }
    }
    return false;
  }

  boost::asio::io_context& ioc_;
  Answer answer_;
  std::multimap<Key, std::shared_ptr<Waiter>> waiters_;
};

}  // namespace cohort::api
