// A blocking HTTP/1.1 client for the CLI and the agent, on Boost.Beast, over plain TCP or TLS
// (https:// URLs). One connection, kept alive between requests. Not thread-safe (use one client
// per thread), except for Cancel().
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "common/status.h"
#include "common/time.h"

namespace boost::asio::ssl {
class context;
}

namespace cohort::client {

struct HttpResult {
  int status = 0;
  std::string content_type;
  std::string body;
};

// How an https:// master's certificate is verified: against the CA certificates in `ca_file`
// (PEM), else the system's; and always against the URL's host (a DNS name, or an IP address the
// certificate must list as such). Plain http:// ignores it.
struct TlsOptions {
  std::string ca_file;
  // The CAs of ca_file once loaded (LoadTls); clients made with it share them and never read
  // the file again.
  std::shared_ptr<boost::asio::ssl::context> context = nullptr;
};

// `tls` with its context loaded from its CA file if `base_url` is https:// and it has none yet:
// for a process that makes clients again and again (the agent), so that a CA file deleted
// later cannot make one fail. kInvalidArgument naming the file if it cannot be used.
StatusOr<TlsOptions> LoadTls(std::string_view base_url, TlsOptions tls);

// A connection the server switched to another protocol (HttpClient::Upgrade): raw bytes both
// ways, blocking. Not thread-safe; its HttpClient must outlive it.
class UpgradedConnection {
 public:
  virtual ~UpgradedConnection() = default;
  // Some bytes, at most `max`, once they come; empty once the server has closed.
  virtual StatusOr<std::string> ReadSome(size_t max) = 0;
  virtual Status Write(std::string_view data) = 0;
  // The socket, to wait on with poll(); bytes may already wait above it (HasBuffered: read
  // with the answer, or deciphered by TLS) where poll cannot see them.
  virtual int fd() = 0;
  virtual bool HasBuffered() = 0;
};

struct UpgradeResult {
  // The answer, when the server did not switch (connection is null then).
  HttpResult answer;
  std::unique_ptr<UpgradedConnection> connection;
};

class HttpClient {
 public:
  // `base_url`: "http://host:port" or "https://host:port". InvalidArgument for anything else, or
  // for a CA file that cannot be used (naming it).
  static StatusOr<std::unique_ptr<HttpClient>> Create(std::string_view base_url,
                                                      const TlsOptions& tls = {});
  ~HttpClient();

  // kUnavailable if the server cannot be reached or its certificate is not trusted (the message
  // says why and what to do); kDeadlineExceeded after `timeout`.
  StatusOr<HttpResult> Request(
      std::string_view method, std::string_view target, std::string_view body = {},
      std::string_view content_type = "application/json",
      Duration timeout = std::chrono::seconds(30),
      const std::vector<std::pair<std::string, std::string>>& headers = {});

  // Streams the body of a GET to `on_data` as it arrives, until the server ends it or `on_data`
  // returns false. A non-2xx answer is returned as its HttpResult with the whole body.
  StatusOr<HttpResult> Stream(std::string_view target,
                              const std::function<bool(std::string_view)>& on_data);

  // GET `target` asking the server to switch to `protocol` (Connection: Upgrade): the
  // connection once it answers 101, which owns this client's connection from then on.
  StatusOr<UpgradeResult> Upgrade(std::string_view target, std::string_view protocol);

  // Sends `name: value` with every request and stream from now on (an empty value: no longer).
  // Not while a request is in progress.
  void SetHeader(std::string name, std::string value);

  // Makes the request (or stream) in progress on another thread, if any, fail at once with
  // kUnavailable and its connection closed; a request that starts after Cancel returns is not
  // affected. Thread-safe: how a thread waiting in a long poll is told to give up.
  void Cancel();

  const std::string& base_url() const;

  // The implementation's (named here so that the upgraded connection can hold it).
  struct Impl;

 private:
  explicit HttpClient(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace cohort::client
