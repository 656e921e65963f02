#include "api/store_reads.h"

#include <fmt/format.h>

namespace cohort::api {

StoreReads::StoreReads(store::ObjectStore& store, Post post, size_t max_under_way)
    : store_(store), post_(std::move(post)), max_under_way_(max_under_way) {}

StoreReads::~StoreReads() { Stop(); }

Status StoreReads::Start(Read read, Done done) {
  if (*under_way_ >= max_under_way_) {
    return Status::Unavailable(fmt::format(
        "too many artifact reads under way ({} at once); retry in a moment", max_under_way_));
  }
  ++*under_way_;
  thread_.Post(
      [this, read = std::move(read), done = std::move(done), under_way = under_way_]() mutable {
        StatusOr<HttpResponse> answer = read(store_);
        post_([done = std::move(done), answer = std::move(answer), under_way]() mutable {
          --*under_way;
          done(std::move(answer));
        });
      });
  return Status::Ok();
}

void StoreReads::Stop() { thread_.Stop(); }

}  // namespace cohort::api
