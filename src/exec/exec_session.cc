#include "exec/exec_session.h"

#include <fmt/format.h>
#include <netdb.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <optional>
#include <thread>

#include "common/strings.h"

namespace cohort::exec {
namespace {

// A connected socket, or -1 with `why`. Refused connections are tried again until `deadline`.
int Connect(const Endpoint& endpoint, std::chrono::steady_clock::time_point deadline,
            std::string* why) {
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  while (true) {
    addrinfo* found = nullptr;
    int rc =
        ::getaddrinfo(endpoint.host.c_str(), std::to_string(endpoint.port).c_str(), &hints, &found);
    if (rc != 0) {
      *why = fmt::format("cannot resolve {}: {}", endpoint.host, gai_strerror(rc));
    } else {
      for (addrinfo* a = found; a != nullptr; a = a->ai_next) {
        int fd = ::socket(a->ai_family, a->ai_socktype | SOCK_CLOEXEC, a->ai_protocol);
        if (fd < 0) continue;
        if (::connect(fd, a->ai_addr, a->ai_addrlen) == 0) {
          ::freeaddrinfo(found);
          return fd;
        }
        *why = fmt::format("cannot connect to {}:{}: {}", endpoint.host, endpoint.port,
                           strerror(errno));
        ::close(fd);
      }
      ::freeaddrinfo(found);
    }
    if (std::chrono::steady_clock::now() >= deadline) return -1;
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
  }
}

// The answer of a session that is not streamed: one line.
ExecAnswer ReadAnswerLine(int fd) {
  std::string line;
  char buffer[4096];
  while (line.find('\n') == std::string::npos && line.size() < 64 * 1024) {
    ssize_t n = ::recv(fd, buffer, sizeof(buffer), 0);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    line.append(buffer, static_cast<size_t>(n));
  }
  size_t end = line.find('\n');
  if (end == std::string::npos) {
    return ExecAnswer::Refused(
        "the connection closed before the command ended (did its task stop?)");
  }
  auto answer = DecodeAnswer(line.substr(0, end));
  return answer.ok() ? *answer : ExecAnswer::Refused(answer.status().message());
}

// The frames of a streamed session, each passed on, up to the answer.
ExecAnswer ReadFrames(int fd, const OutputSink& sink) {
  std::string pending;
  char buffer[64 * 1024];
  while (true) {
    // Every whole frame in `pending` first.
    while (true) {
      size_t newline = pending.find('\n');
      if (newline == std::string::npos || newline > 32) break;
      std::string header = pending.substr(0, newline);
      size_t space = header.find(' ');
      auto length = space == std::string::npos ? std::nullopt
                                               : ParseInteger(header.substr(space + 1), 0, 1 << 30);
      if (!length) return ExecAnswer::Refused("the service sent a malformed frame");
      const size_t size = static_cast<size_t>(*length);
      if (pending.size() < newline + 1 + size) break;
      std::string_view payload(pending.data() + newline + 1, size);
      const std::string kind = header.substr(0, space);
      if (kind == "end") {
        auto answer = DecodeAnswer(payload);
        return answer.ok() ? *answer : ExecAnswer::Refused(answer.status().message());
      }
      if (kind == "out" && sink.out) sink.out(payload);
      if (kind == "err" && sink.err) sink.err(payload);
      pending.erase(0, newline + 1 + size);
    }
    ssize_t n = ::recv(fd, buffer, sizeof(buffer), 0);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      // A refusal before the session began is an answer line, not a frame.
      if (pending.rfind("{", 0) == 0 && pending.find('\n') != std::string::npos) {
        auto answer = DecodeAnswer(pending.substr(0, pending.find('\n')));
        if (answer.ok()) return *answer;
      }
      return ExecAnswer::Refused(
          "the connection closed before the command ended (did its task stop?)");
    }
    pending.append(buffer, static_cast<size_t>(n));
  }
}

}  // namespace

void SessionCancel::Cancel() {
  std::lock_guard lock(mu_);
  cancelled_ = true;
  if (fd_ >= 0) ::shutdown(fd_, SHUT_RDWR);
}

void SessionCancel::Signal(int number) {
  std::lock_guard lock(mu_);
  if (fd_ < 0 || cancelled_) return;
  const std::string line = EncodeSignal(number);
  // A few bytes: the socket's buffer takes them whole, or the session is ending anyway.
  (void)::send(fd_, line.data(), line.size(), MSG_NOSIGNAL | MSG_DONTWAIT);
}

bool SessionCancel::cancelled() const {
  std::lock_guard lock(mu_);
  return cancelled_;
}

// A session's socket, known to its SessionCancel while it is open.
class SessionConnection {
 public:
  SessionConnection(int fd, SessionCancel* cancel) : fd_(fd), cancel_(cancel) {
    if (!cancel_) return;
    std::lock_guard lock(cancel_->mu_);
    cancel_->fd_ = fd_;
    if (cancel_->cancelled_) ::shutdown(fd_, SHUT_RDWR);
  }
  ~SessionConnection() {
    if (cancel_) {
      std::lock_guard lock(cancel_->mu_);
      cancel_->fd_ = -1;
    }
    ::close(fd_);
  }
  int fd() const { return fd_; }

 private:
  int fd_;
  SessionCancel* cancel_;
};

ExecAnswer RunSession(const Endpoint& endpoint, const ExecRequest& request, Duration connect_for,
                      const OutputSink& sink, SessionCancel* cancel) {
  std::string why;
  int connected = Connect(endpoint, std::chrono::steady_clock::now() + connect_for, &why);
  if (connected < 0) return ExecAnswer::Refused(why + " (is its task running?)");
  SessionConnection connection(connected, cancel);
  const int fd = connection.fd();
  std::string text = EncodeRequest(request);
  for (size_t sent = 0; sent < text.size();) {
    ssize_t n = ::send(fd, text.data() + sent, text.size() - sent, MSG_NOSIGNAL);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      return ExecAnswer::Refused(fmt::format("cannot send the request: {}", strerror(errno)));
    }
    sent += static_cast<size_t>(n);
  }
  // The answer comes when the command ends, however long it runs.
  ExecAnswer answer = request.stream ? ReadFrames(fd, sink) : ReadAnswerLine(fd);
  if (cancel && cancel->cancelled() && !answer.error.empty()) {
    return ExecAnswer::Refused("cancelled by the caller");
  }
  return answer;
}

}  // namespace cohort::exec
