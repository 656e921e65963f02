#include "agent/dataset_prefetcher.h"

#include <spdlog/spdlog.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <utility>

#include "common/strings.h"
#include "store/dataset_layout.h"

namespace cohort::agent {

DatasetPrefetcher::DatasetPrefetcher(std::string cache_dir, int64_t cache_bytes,
                                     ObjectStoreOpener open_store)
    : cache_(std::move(cache_dir), cache_bytes),
      open_store_(std::move(open_store)),
      thread_([this] { Loop(); }) {}

DatasetPrefetcher::~DatasetPrefetcher() {
  {
    std::lock_guard lock(mu_);
    stopping_ = true;
    queue_.clear();
  }
  changed_.notify_all();
  thread_.join();
}

void DatasetPrefetcher::Want(const std::vector<DatasetPrefetch>& wanted) {
  {
    std::lock_guard lock(mu_);
    std::set<std::string> asked;
    for (const DatasetPrefetch& p : wanted) {
      if (asked.size() >= kMaxPrefetchesPerNode) break;
      if (!asked.insert(p.manifest_key).second) continue;
      const bool known = asked_.count(p.manifest_key) > 0;
      if (known || fetching_ == p.manifest_key) continue;
      queue_.push_back(p);
    }
    // What is no longer asked for is forgotten; a queued one is not fetched.
    std::erase_if(queue_, [&](const DatasetPrefetch& p) { return !asked.count(p.manifest_key); });
    std::erase_if(done_, [&](const std::string& key) { return !asked.count(key); });
    std::erase_if(failures_, [&](const auto& f) { return !asked.count(f.first); });
    asked_ = std::move(asked);
  }
  changed_.notify_all();
}

void DatasetPrefetcher::Loop() {
  std::unique_lock lock(mu_);
  while (true) {
    changed_.wait(lock, [&] { return stopping_ || !queue_.empty(); });
    if (stopping_) return;
    DatasetPrefetch p = std::move(queue_.front());
    queue_.pop_front();
    fetching_ = p.manifest_key;
    lock.unlock();
    const auto began = std::chrono::steady_clock::now();
    Status result = Status::Ok();
    int64_t bytes = 0;
    bool fetched = false;
    auto store = open_store_(p.store);
    if (!store.ok()) {
      result = store.status();
    } else if (auto held = cache_.Acquire(**store, p.manifest_key); !held.ok()) {
      result = held.status();
    } else {
      bytes = held->bytes;
      fetched = held->fetched;
      // Held while the cache is trimmed, so that it is not the one evicted; then no task reads
      // it yet, and a later trim may evict it like any other.
      if (auto trimmed = cache_.Trim(); !trimmed.ok()) {
        spdlog::warn("dataset cache: {}", trimmed.status().message());
      }
      ::close(held->lock_fd);
    }
    const double seconds =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - began).count();
    if (result.ok()) {
      spdlog::info("dataset {}: {} ahead of its job ({} bytes, {:.1f} s)", p.ref,
                   fetched ? "fetched" : "already in the cache", bytes, seconds);
    } else {
      spdlog::warn("dataset {}: could not fetch it ahead of its job: {}", p.ref, result.message());
    }
    lock.lock();
    fetching_.reset();
    settled_ = true;
    // The next report says what the cache holds even if nothing changed (it held the version
    // already): the master that asked is waiting to hear it.
    sent_.reset();
    if (asked_.count(p.manifest_key)) {
      if (result.ok()) {
        done_.insert(p.manifest_key);
      } else {
        failures_[p.manifest_key] = result.message();
      }
    }
    changed_.notify_all();
  }
}

void DatasetPrefetcher::Fill(AgentReport& report, Timestamp now) {
  std::lock_guard lock(mu_);
  for (const auto& [key, why] : failures_) {
    auto id = store::DatasetCacheId(key);
    // Cut well within what the master takes (a character cut in two becomes U+FFFD).
    if (id.ok())
      report.prefetch_failures[*id] = ValidUtf8(why.substr(0, kMaxPrefetchFailureBytes - 32));
  }
  auto ids = cache_.Ids(kMaxCachedDatasetsPerReport);
  if (!ids.ok()) {
    spdlog::warn("dataset cache: {}", ids.status().message());
    return;
  }
  std::sort(ids->begin(), ids->end());
  if (sent_ && *sent_ == *ids && now - sent_at_ < kResendEvery) return;
  report.cached_datasets = std::move(*ids);
}

void DatasetPrefetcher::Acknowledge(const AgentReport& report, Timestamp now) {
  if (!report.cached_datasets) return;
  std::lock_guard lock(mu_);
  sent_ = *report.cached_datasets;
  sent_at_ = now;
}

bool DatasetPrefetcher::TakeSettled() {
  std::lock_guard lock(mu_);
  return std::exchange(settled_, false);
}

void DatasetPrefetcher::Drain() {
  std::unique_lock lock(mu_);
  changed_.wait(lock, [&] { return stopping_ || (queue_.empty() && !fetching_); });
}

}  // namespace cohort::agent
