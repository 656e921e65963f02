#include "api/connection_slots.h"

#include <algorithm>
#include <utility>

namespace cohort::api {

void ConnectionSlots::Slot::Enter(ConnectionPhase phase) {
  if (!owner_) return;
  record_->phase = phase;
  owner_->Rerank(record_);
}

void ConnectionSlots::Slot::MarkAuthenticated() {
  if (!owner_) return;
  record_->authenticated = true;
  owner_->Rerank(record_);
}

void ConnectionSlots::Slot::Release() {
  if (!owner_) return;
  owner_->Remove(record_);
}

ConnectionSlots::Taken ConnectionSlots::Take(const std::string& address,
                                             std::function<void()> close) {
  Taken taken;
  const size_t cap = limits_.max_per_address;
  while (cap > 0 && held_by(address) >= cap) {
    if (!CloseFirst(&address)) {
      AddressEntry& entry = addresses_[address];
      taken.refusal = Refusal::kAddressFull;
      taken.first_refusal = !entry.refused;
      entry.refused = true;
      return taken;
    }
    ++taken.closed;
  }
  while (size_ >= limits_.max_connections) {
    if (!CloseFirst(nullptr)) {
      taken.refusal = Refusal::kServerFull;
      return taken;
    }
    ++taken.closed;
  }
  auto& list = ranks_[kStrangerHeader];
  auto record = list.insert(list.end(), Record{address, std::move(close), ConnectionPhase::kHeader,
                                               false, kStrangerHeader, nullptr});
  taken.slot.reset(new Slot());
  taken.slot->owner_ = this;
  taken.slot->record_ = record;
  record->slot = taken.slot.get();
  AddressEntry& entry = addresses_[address];
  ++entry.held;
  entry.refused = false;
  ++size_;
  return taken;
}

bool ConnectionSlots::CloseOne() { return CloseFirst(nullptr); }

size_t ConnectionSlots::LowerCap(size_t max) {
  limits_.max_connections = std::max<size_t>(1, std::min(limits_.max_connections, max));
  size_t closed = 0;
  while (size_ > limits_.max_connections && CloseFirst(nullptr)) ++closed;
  return closed;
}

size_t ConnectionSlots::held_by(const std::string& address) const {
  auto it = addresses_.find(address);
  return it == addresses_.end() ? 0 : it->second.held;
}

ConnectionSlots::Rank ConnectionSlots::RankOf(const Record& record) {
  switch (record.phase) {
    case ConnectionPhase::kIdle:
      return record.authenticated ? kAuthenticatedIdle : kStrangerIdle;
    case ConnectionPhase::kHeader:
      return record.authenticated ? kKept : kStrangerHeader;
    case ConnectionPhase::kBody:
      return record.authenticated ? kKept : kStrangerBody;
    case ConnectionPhase::kServing:
      return kKept;
  }
  return kKept;
}

void ConnectionSlots::Rerank(std::list<Record>::iterator record) {
  Rank rank = RankOf(*record);
  if (rank == record->rank) return;
  ranks_[rank].splice(ranks_[rank].end(), ranks_[record->rank], record);
  record->rank = rank;
}

bool ConnectionSlots::CloseFirst(const std::string* address) {
  for (int rank = 0; rank < kKept; ++rank) {
    for (auto it = ranks_[rank].begin(); it != ranks_[rank].end(); ++it) {
      if (address && it->address != *address) continue;
      // The place is given back before the connection hears of it, so that closing it finds
      // nothing left to release.
      std::function<void()> close = std::move(it->close);
      Remove(it);
      if (close) close();
      return true;
    }
  }
  return false;
}

void ConnectionSlots::Remove(std::list<Record>::iterator record) {
  record->slot->owner_ = nullptr;
  auto entry = addresses_.find(record->address);
  if (entry != addresses_.end() && --entry->second.held == 0) addresses_.erase(entry);
  ranks_[record->rank].erase(record);
  --size_;
}

}  // namespace cohort::api
