// What the HTTP server's and the proxy's tests switch a connection to: a protocol that answers
// every piece it gets in capitals, until the peer closes.
#pragma once

#include <cctype>
#include <functional>
#include <memory>
#include <string>
#include <string_view>

#include "api/http_server.h"

namespace cohort::api {

inline void ServeShout(std::shared_ptr<ByteChannel> channel) {
  auto loop = std::make_shared<std::function<void()>>();
  *loop = [channel, loop] {
    channel->Read([channel, loop](std::string_view data) {
      if (data.empty()) {
        *loop = nullptr;  // the peer closed: the loop lets go of itself
        return;
      }
      std::string upper(data);
      for (char& c : upper) c = static_cast<char>(std::toupper(c));
      channel->Write(std::move(upper), [loop](bool ok) {
        if (ok && *loop) (*loop)();
      });
    });
  };
  (*loop)();
}

}  // namespace cohort::api
