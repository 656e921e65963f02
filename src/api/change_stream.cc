#include "api/change_stream.h"

#include <fmt/format.h>

#include <boost/asio/post.hpp>

#include "api/api_server.h"
#include "model/json.h"

namespace cohort::api {
namespace {

constexpr auto kKeepAlive = std::chrono::seconds(15);

}  // namespace

ChangeStreams::ChangeStreams(boost::asio::io_context& ioc, size_t max_streams)
    : ioc_(ioc), max_streams_(max_streams), keep_alive_(ioc) {}

void ChangeStreams::Open(std::shared_ptr<Responder> responder) {
  if (streams_.size() >= max_streams_) {
    return SendAnswer(*responder, Status::Unavailable(fmt::format(
                                      "{} change streams are open, the most the master serves; "
                                      "read again later",
                                      max_streams_)));
  }
  auto stream = std::make_shared<Stream>();
  stream->responder = std::move(responder);
  streams_.push_back(stream);
  stream->responder->StartStream(200, "text/event-stream");
  // A client that goes away frees its place at once, not at the next write.
  stream->responder->OnClose([this, weak = std::weak_ptr<Stream>(stream)] {
    if (auto s = weak.lock()) Remove(s);
  });
  // How long an EventSource waits before it reconnects; and a first line, so that the client
  // knows at once that the stream is open.
  Flush(stream, "retry: 2000\n: connected\n\n");
  if (!keep_alive_armed_) KeepAlive();
}

namespace {

// An id to tell a stream of, unless it already waits for more than a client could use.
template <typename Id>
void Note(std::set<Id>& pending, bool& resync, const Id& id) {
  if (pending.size() >= kMaxPendingIds) {
    resync = true;
  } else {
    pending.insert(id);
  }
}

}  // namespace

void ChangeStreams::JobChanged(JobId id) {
  for (auto& s : streams_) Note(s->jobs, s->resync, id);
  ScheduleFlush();
}

void ChangeStreams::NodeChanged(const std::string& id) {
  for (auto& s : streams_) Note(s->nodes, s->resync, id);
  ScheduleFlush();
}

// The master calls its listener in the middle of a change: the events go out once the loop
// has finished it, all the changes of that turn together.
void ChangeStreams::ScheduleFlush() {
  if (flush_posted_ || streams_.empty()) return;
  flush_posted_ = true;
  boost::asio::post(ioc_, [this] {
    flush_posted_ = false;
    auto streams = streams_;  // Flush may remove a stream whose client is gone
    for (auto& s : streams) Flush(s);
  });
}

void ChangeStreams::Flush(const std::shared_ptr<Stream>& s, std::string text) {
  if (s->writing) return;  // what is pending goes out when the chunk under way is written
  if (s->resync) {
    text += "event: resync\ndata: {}\n\n";
  } else {
    for (JobId id : s->jobs) text += fmt::format("event: job\ndata: {{\"id\": {}}}\n\n", id);
    for (const auto& id : s->nodes) {
      text += fmt::format("event: node\ndata: {}\n\n", Json{{"id", id}}.dump());
    }
  }
  s->jobs.clear();
  s->nodes.clear();
  s->resync = false;
  if (text.empty()) return;
  if (s->responder->closed()) return Remove(s);
  s->writing = true;
  s->responder->WriteChunk(std::move(text), [this, weak = std::weak_ptr<Stream>(s)](bool ok) {
    auto stream = weak.lock();
    if (!stream) return;
    stream->writing = false;
    if (!ok) return Remove(stream);
    if (stream->resync || !stream->jobs.empty() || !stream->nodes.empty()) Flush(stream);
  });
}

void ChangeStreams::Remove(const std::shared_ptr<Stream>& stream) { streams_.remove(stream); }

void ChangeStreams::KeepAlive() {
  keep_alive_armed_ = true;
  keep_alive_.expires_after(kKeepAlive);
  keep_alive_.async_wait([this](const boost::system::error_code& ec) {
    keep_alive_armed_ = false;
    if (ec) return;
    auto streams = streams_;
    for (auto& s : streams) Flush(s, ": keep-alive\n\n");
    if (!streams_.empty()) KeepAlive();
  });
}

void ChangeStreams::CloseAll() {
  keep_alive_.cancel();
  auto streams = std::move(streams_);
  streams_.clear();
  for (auto& s : streams) {
    if (!s->responder->closed()) s->responder->EndStream();
  }
}

}  // namespace cohort::api
