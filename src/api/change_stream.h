// GET /api/v1/events (docs/api.md, "Changes"): what changed, as server-sent events, so that a
// page (the dashboard) reads again what it shows when it changes instead of polling:
//
//   event: job
//   data: {"id": 7}
//
//   event: node
//   data: {"id": "node-1"}
//
// Only ids, which every user may list anyway; the client reads the rest with its own token, so
// the roles apply as always. Changes are coalesced: an id changed many times while a chunk is
// being written goes out once. Bounded: at most `max_streams` streams at once (one more gets
// 503), and at most kMaxPendingIds ids wait per stream; past that the stream says
// `event: resync` (read everything again) instead of a list no client could use. A comment line
// every 15 s keeps proxies from closing an idle stream and tells the master of a client gone.
//
// Runs on the master's event-loop thread.
#pragma once

#include <boost/asio/io_context.hpp>
#include <boost/asio/steady_timer.hpp>
#include <list>
#include <memory>
#include <set>
#include <string>

#include "api/http_server.h"
#include "model/job.h"

namespace cohort::api {

inline constexpr size_t kMaxChangeStreams = 256;
inline constexpr size_t kMaxPendingIds = 1000;

class ChangeStreams {
 public:
  explicit ChangeStreams(boost::asio::io_context& ioc, size_t max_streams = kMaxChangeStreams);

  // Starts a stream on `responder` (200, text/event-stream), or answers 503 when full.
  void Open(std::shared_ptr<Responder> responder);
  void JobChanged(JobId id);
  void NodeChanged(const std::string& id);
  // Ends every stream and the keep-alive timer (the server is stopping).
  void CloseAll();
  size_t size() const { return streams_.size(); }

 private:
  struct Stream {
    std::shared_ptr<Responder> responder;
    std::set<JobId> jobs;
    std::set<std::string> nodes;
    bool resync = false;
    bool writing = false;
  };
  using Handle = std::list<std::shared_ptr<Stream>>::iterator;

  void ScheduleFlush();
  void Flush(const std::shared_ptr<Stream>& stream, std::string text = {});
  void Remove(const std::shared_ptr<Stream>& stream);
  void KeepAlive();

  boost::asio::io_context& ioc_;
  size_t max_streams_;
  std::list<std::shared_ptr<Stream>> streams_;
  bool flush_posted_ = false;
  boost::asio::steady_timer keep_alive_;
  bool keep_alive_armed_ = false;
};

}  // namespace cohort::api
