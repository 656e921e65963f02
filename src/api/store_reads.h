// Reads of the object store for the API (its artifact routes): the store waits on the disk or the
// network (S3), and is not thread-safe (Master::objects), so each read runs on one thread of its
// own, in order, and its answer comes back to the event loop. A bounded number may be under way
// (queued or running): beyond that a read is refused at once, so a client that asks for many
// large files cannot queue work, and memory, without end.
#pragma once

#include <cstddef>
#include <functional>
#include <memory>

#include "api/http_server.h"
#include "common/status.h"
#include "os/worker_thread.h"
#include "store/object_store.h"

namespace cohort::api {

class StoreReads {
 public:
  // Reads under way at once, queued or running; beyond them, kUnavailable.
  static constexpr size_t kMaxUnderWay = 32;
  using Read = std::function<StatusOr<HttpResponse>(store::ObjectStore&)>;
  using Done = std::function<void(StatusOr<HttpResponse>)>;
  // Brings work back to the event loop (posts it there).
  using Post = std::function<void(std::function<void()>)>;

  StoreReads(store::ObjectStore& store, Post post, size_t max_under_way = kMaxUnderWay);
  ~StoreReads();  // Stop()

  // Runs `read` with the store on the reader's thread, then `done` with what it gave, through
  // `post`. kUnavailable (nothing runs) when max_under_way reads are under way. On the event
  // loop only.
  Status Start(Read read, Done done);
  // Waits for the read that is running and ends the thread; queued reads are dropped (their
  // callers are gone with the server). Idempotent.
  void Stop();

  size_t under_way() const { return *under_way_; }

 private:
  store::ObjectStore& store_;
  Post post_;
  const size_t max_under_way_;
  // Counted on the event loop only: up in Start, down when the answer is back. Shared with the
  // answers in flight, which may come back after the reader is gone.
  std::shared_ptr<size_t> under_way_ = std::make_shared<size_t>(0);
  WorkerThread thread_{WorkerThread::AtStop::kDropQueued};
};

}  // namespace cohort::api
