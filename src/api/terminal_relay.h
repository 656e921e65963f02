// Relays one person's terminal (`cohort shell`, an upgraded GET /api/v1/jobs/{id}/terminal) to
// the terminal server of the session's task (terminal/terminal_server.h), frame by frame
// (terminal/terminal_frame.h): the person's input and resizes one way, the shell's output and
// end the other. The master opens the connection to the task and proves itself with the job's
// credential in the hello, which the person never sees; so the person needs no route to the
// node, only to the master (docs/runtimes.md, "Shells").
//
// Each direction reads a chunk only once the previous one is written on: a slow reader on
// either side holds its peer back, and the relay holds at most a chunk and a frame each way.
#pragma once

#include <boost/asio/io_context.hpp>
#include <functional>
#include <memory>
#include <string>

#include "api/http_server.h"
#include "terminal/terminal_hello.h"

namespace cohort::api {

// Where the session's terminal is served, and how to be let in.
struct TerminalTarget {
  std::string node;  // for messages
  std::string host;
  int port = 0;
  terminal::Hello hello;
};

class TerminalRelay {
 public:
  struct Callbacks {
    std::function<void()> on_input;                      // the person typed
    std::function<void(const std::string& why)> on_end;  // the relay is over
  };
  // Connects to `target` (within connect_timeout) and relays until either side closes. The
  // relay keeps itself alive while it runs; the handle lets the master speak to the person.
  static std::shared_ptr<TerminalRelay> Start(boost::asio::io_context& ioc,
                                              std::shared_ptr<ByteChannel> person,
                                              TerminalTarget target, Callbacks callbacks,
                                              Duration connect_timeout = std::chrono::seconds(10));
  virtual ~TerminalRelay() = default;
  // A line from Cohort to the person (FrameType::kNotice), after what is on its way.
  virtual void Notice(std::string text) = 0;
  virtual void Close(const std::string& why) = 0;
  virtual bool closed() const = 0;
};

}  // namespace cohort::api
