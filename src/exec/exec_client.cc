#include "exec/exec_client.h"

#include <fmt/format.h>
#include <netdb.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <thread>

#include "common/strings.h"
#include "exec/exec_endpoints.h"
#include "exec/exec_request.h"

namespace cohort::exec {
namespace {

int Fail(const std::string& name, const std::string& why) {
  fmt::print(stderr, "cohort-exec: {}: {}\n", name, why);
  return 255;
}

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

}  // namespace

int RunRemote(const RunOptions& options) {
  const char* credential = ::getenv("COHORT_JOB_CREDENTIAL");
  if (credential == nullptr || *credential == '\0') {
    return Fail(options.name,
                "this task holds no job credential ($COHORT_JOB_CREDENTIAL): only the tasks of "
                "an MPI job start commands in each other");
  }
  const char* endpoints = ::getenv("COHORT_EXEC_ENDPOINTS");
  auto endpoint = FindEndpoint(endpoints ? endpoints : "", options.name);
  if (!endpoint.ok()) return Fail(options.name, endpoint.status().message());
  if (options.words.empty()) return Fail(options.name, "no command to run");

  std::string why;
  int fd = Connect(*endpoint, std::chrono::steady_clock::now() + options.connect_for, &why);
  if (fd < 0) return Fail(options.name, why + " (is its task running?)");
  std::string request = EncodeRequest({credential, Join(options.words, " ")});
  for (size_t sent = 0; sent < request.size();) {
    ssize_t n = ::send(fd, request.data() + sent, request.size() - sent, MSG_NOSIGNAL);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      ::close(fd);
      return Fail(options.name, fmt::format("cannot send the request: {}", strerror(errno)));
    }
    sent += static_cast<size_t>(n);
  }
  // The answer comes when the command ends, however long it runs.
  std::string line;
  char buffer[4096];
  while (line.find('\n') == std::string::npos && line.size() < 64 * 1024) {
    ssize_t n = ::recv(fd, buffer, sizeof(buffer), 0);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    line.append(buffer, static_cast<size_t>(n));
  }
  ::close(fd);
  size_t end = line.find('\n');
  if (end == std::string::npos) {
    return Fail(options.name,
                "the connection closed before the command ended (did its task stop?)");
  }
  auto answer = DecodeAnswer(line.substr(0, end));
  if (!answer.ok()) return Fail(options.name, answer.status().message());
  if (!answer->error.empty()) return Fail(options.name, answer->error);
  return answer->ExitStatus();
}

}  // namespace cohort::exec
