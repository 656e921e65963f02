#include "api/terminal_relay.h"

#include "api/keep_alive.h"

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <boost/asio.hpp>

#include "common/units.h"
#include "terminal/terminal_frame.h"

namespace cohort::api {
namespace {

namespace net = boost::asio;
using tcp = net::ip::tcp;
using terminal::EncodeFrame;
using terminal::Frame;
using terminal::FrameReader;
using terminal::FrameType;

constexpr size_t kReadChunk = 16 * 1024;

class Relay final : public TerminalRelay, public std::enable_shared_from_this<Relay> {
 public:
  Relay(net::io_context& ioc, std::shared_ptr<ByteChannel> person, TerminalTarget target,
        Callbacks callbacks)
      : resolver_(ioc),
        task_(ioc),
        timer_(ioc),
        person_(std::move(person)),
        target_(std::move(target)),
        callbacks_(std::move(callbacks)) {}

  void Begin(Duration connect_timeout) {
    timer_.expires_after(connect_timeout);
    timer_.async_wait([self = shared_from_this(), connect_timeout](boost::system::error_code ec) {
      if (ec || self->connected_ || self->closed_) return;
      self->Refuse(fmt::format("the session's terminal on node {} ({}:{}) did not answer within {}",
                               self->target_.node, self->target_.host, self->target_.port,
                               FormatDuration(connect_timeout)));
    });
    resolver_.async_resolve(
        target_.host, std::to_string(target_.port),
        [self = shared_from_this()](boost::system::error_code ec, tcp::resolver::results_type r) {
          if (self->closed_) return;
          if (ec) return self->Refuse(self->Unreachable(ec));
          self->Connect(std::move(r));
        });
  }

  // A task that has just started may not listen yet: a refused connection is tried again until
  // the connect timeout.
  void Connect(tcp::resolver::results_type endpoints) {
    net::async_connect(
        task_, endpoints,
        [self = shared_from_this(), endpoints](boost::system::error_code ec, const tcp::endpoint&) {
          if (self->closed_) return;
          if (ec == net::error::connection_refused) {
            auto retry = std::make_shared<net::steady_timer>(self->task_.get_executor());
            retry->expires_after(std::chrono::milliseconds(200));
            retry->async_wait([self, retry, endpoints](boost::system::error_code) {
              if (self->closed_) return;
              boost::system::error_code ignored;
              self->task_.close(ignored);
              self->Connect(endpoints);
            });
            return;
          }
          if (ec) return self->Refuse(self->Unreachable(ec));
          self->connected_ = true;
          KeepAlive(self->task_);
          self->timer_.cancel();
          self->ToTask(EncodeFrame(FrameType::kHello, terminal::EncodeHello(self->target_.hello)),
                       [self] {
                         self->ReadPerson();
                         self->ReadTask();
                       });
        });
  }

  void Notice(std::string text) override {
    if (closed_) return;
    person_->Write(EncodeFrame(FrameType::kNotice, text), nullptr);
  }

  void Close(const std::string& why) override {
    if (closed_) return;
    closed_ = true;
    timer_.cancel();
    boost::system::error_code ignored;
    resolver_.cancel();
    task_.shutdown(tcp::socket::shutdown_both, ignored);
    task_.close(ignored);
    // What was written to the person goes out before the connection closes.
    person_->Write("", [person = person_](bool) { person->Close(); });
    if (callbacks_.on_end) callbacks_.on_end(why);
  }

  bool closed() const override { return closed_; }

 private:
  std::string Unreachable(const boost::system::error_code& ec) const {
    return fmt::format("cannot reach the session's terminal on node {} ({}:{}): {}", target_.node,
                       target_.host, target_.port, ec.message());
  }

  void Refuse(const std::string& why) {
    person_->Write(EncodeFrame(FrameType::kRefused, why), nullptr);
    Close(why);
  }

  // Person -> task: only input and resizes pass.
  void ReadPerson() {
    person_->Read([self = shared_from_this()](std::string_view data) {
      if (self->closed_) return;
      if (data.empty()) return self->Close("the person's connection closed");
      self->from_person_.Append(data);
      std::string out;
      std::string error;
      while (auto frame = self->from_person_.Next(&error)) {
        if (frame->type == FrameType::kInput) {
          if (self->callbacks_.on_input) self->callbacks_.on_input();
        } else if (frame->type != FrameType::kResize) {
          error = "only input and resize frames go to a terminal";
          break;
        }
        out += EncodeFrame(*frame);
      }
      if (!error.empty()) return self->Refuse(error);
      if (out.empty()) return self->ReadPerson();
      self->ToTask(std::move(out), [self] { self->ReadPerson(); });
    });
  }

  // Task -> person: whatever the server sends, whole frames at a time.
  void ReadTask() {
    task_.async_read_some(net::buffer(task_buffer_, sizeof(task_buffer_)),
                          [self = shared_from_this()](boost::system::error_code ec, size_t n) {
                            if (self->closed_) return;
                            if (ec) return self->Close("the session's terminal closed");
                            self->from_task_.Append(std::string_view(self->task_buffer_, n));
                            std::string out;
                            std::string error;
                            while (auto frame = self->from_task_.Next(&error))
                              out += EncodeFrame(*frame);
                            if (!error.empty())
                              return self->Refuse("the session's terminal: " + error);
                            if (out.empty()) return self->ReadTask();
                            self->person_->Write(std::move(out), [self](bool ok) {
                              if (!ok) return self->Close("the person's connection closed");
                              self->ReadTask();
                            });
                          });
  }

  void ToTask(std::string data, std::function<void()> then) {
    auto buffer = std::make_shared<std::string>(std::move(data));
    net::async_write(task_, net::buffer(*buffer),
                     [self = shared_from_this(), buffer, then = std::move(then)](
                         boost::system::error_code ec, size_t) {
                       if (self->closed_) return;
                       if (ec) return self->Close("the session's terminal closed");
                       then();
                     });
  }

  tcp::resolver resolver_;
  tcp::socket task_;
  net::steady_timer timer_;
  std::shared_ptr<ByteChannel> person_;
  TerminalTarget target_;
  Callbacks callbacks_;
  FrameReader from_person_;
  FrameReader from_task_;
  char task_buffer_[kReadChunk];
  bool connected_ = false;
  bool closed_ = false;
};

}  // namespace

std::shared_ptr<TerminalRelay> TerminalRelay::Start(net::io_context& ioc,
                                                    std::shared_ptr<ByteChannel> person,
                                                    TerminalTarget target, Callbacks callbacks,
                                                    Duration connect_timeout) {
  auto relay =
      std::make_shared<Relay>(ioc, std::move(person), std::move(target), std::move(callbacks));
  relay->Begin(connect_timeout);
  return relay;
}

}  // namespace cohort::api
