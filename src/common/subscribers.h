// Callbacks registered under a key and called when something about that key changes: how a
// waiting reader learns of new data without polling.
//
// Not thread-safe: meant for one event-loop thread. A callback may subscribe or unsubscribe
// anyone, itself included, while it is being notified: callbacks removed during a notification
// are not called afterwards, callbacks added during it are called from the next one.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <utility>
#include <vector>

namespace cohort {

template <typename Key>
class Subscribers {
 public:
  using Id = uint64_t;

  // Returns the id that Unsubscribe takes; ids are never reused.
  Id Subscribe(const Key& key, std::function<void()> callback) {
    Id id = next_id_++;
    by_id_.emplace(id, Entry{key, std::move(callback)});
    by_key_.emplace(key, id);
    return id;
  }

  // Unknown or already removed ids are ignored.
  void Unsubscribe(Id id) {
    auto it = by_id_.find(id);
    if (it == by_id_.end()) return;
    auto [begin, end] = by_key_.equal_range(it->second.key);
    for (auto k = begin; k != end; ++k) {
      if (k->second == id) {
        by_key_.erase(k);
        break;
      }
    }
    by_id_.erase(it);
  }

  // Calls every callback subscribed under `key`, in subscription order.
  void Notify(const Key& key) {
    std::vector<Id> ids;
    auto [begin, end] = by_key_.equal_range(key);
    for (auto k = begin; k != end; ++k) ids.push_back(k->second);
    for (Id id : ids) {
      auto it = by_id_.find(id);
      if (it == by_id_.end()) continue;  // unsubscribed by an earlier callback
      // A copy: the callback may unsubscribe itself, which destroys the stored one.
      std::function<void()> callback = it->second.callback;
      callback();
    }
  }

  bool Has(const Key& key) const { return by_key_.count(key) > 0; }
  size_t size() const { return by_id_.size(); }

 private:
  struct Entry {
    Key key;
    std::function<void()> callback;
  };

  Id next_id_ = 1;
  std::map<Id, Entry> by_id_;
  std::multimap<Key, Id> by_key_;  // equal keys keep their insertion order
};

}  // namespace cohort
