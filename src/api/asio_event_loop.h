// The master's event loop on an Asio io_context: the thread that runs the HTTP server.
#pragma once

#include <boost/asio/io_context.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/steady_timer.hpp>
#include <memory>

#include "master/event_loop.h"

namespace cohort::api {

class AsioEventLoop final : public master::EventLoop {
 public:
  explicit AsioEventLoop(boost::asio::io_context& ioc) : ioc_(ioc) {}

  void Post(std::function<void()> work) override { boost::asio::post(ioc_, std::move(work)); }

  void RunAfter(Duration delay, std::function<void()> work) override {
    auto timer = std::make_shared<boost::asio::steady_timer>(ioc_, delay);
    timer->async_wait([timer, work = std::move(work)](boost::system::error_code ec) {
      if (!ec) work();
    });
  }

 private:
  boost::asio::io_context& ioc_;
};

}  // namespace cohort::api
