// Who holds the HTTP server's connection places, and which of them may be taken back when they
// run short (docs/reliability.md, "Connections"). A new connection is given room by closing one
// that does nothing for anyone (kept alive but idle, or still without a whole request), a
// stranger's before an authenticated client's; a request being served (a long poll, a log
// stream) is never cut off. Pure bookkeeping: the server says what each connection is doing,
// and closes what this picks.
#pragma once

#include <cstddef>
#include <functional>
#include <list>
#include <memory>
#include <string>
#include <unordered_map>

namespace cohort::api {

// What a connection is doing, as far as making room goes.
enum class ConnectionPhase {
  kHeader,   // waiting for its request header, or reading it (a TLS handshake too)
  kBody,     // reading its request's body
  kServing,  // its request is being answered (or refused)
  kIdle,     // kept alive between requests
};

class ConnectionSlots {
  struct Record;

 public:
  struct Limits {
    size_t max_connections = 1024;
    size_t max_per_address = 0;  // 0: no cap per address
  };

  // One connection's place, until Release or its destruction.
  class Slot {
   public:
    ~Slot() { Release(); }
    Slot(const Slot&) = delete;
    Slot& operator=(const Slot&) = delete;
    void Enter(ConnectionPhase phase);
    // The connection carried a request with a valid credential: it is closed to make room only
    // when no stranger's connection can be, and then only while idle.
    void MarkAuthenticated();
    void Release();
    // False once released, or closed to make room.
    bool held() const { return owner_ != nullptr; }

   private:
    friend class ConnectionSlots;
    Slot() = default;
    ConnectionSlots* owner_ = nullptr;
    std::list<Record>::iterator record_;
  };

  enum class Refusal { kNone, kServerFull, kAddressFull };
  struct Taken {
    std::unique_ptr<Slot> slot;  // null when refused
    Refusal refusal = Refusal::kNone;
    size_t closed = 0;  // connections closed to make room
    // The first refusal of this address since it last had room: the one worth a log line.
    bool first_refusal = false;
  };

  explicit ConnectionSlots(Limits limits) : limits_(limits) {}
  ConnectionSlots(const ConnectionSlots&) = delete;
  ConnectionSlots& operator=(const ConnectionSlots&) = delete;

  // A place for a new connection from `address`, in phase kHeader. When `address` holds its cap
  // the room is made by closing one of its own connections; when the server is full, anyone's.
  // A connection is closed by calling its `close`, once, after its place is given back.
  Taken Take(const std::string& address, std::function<void()> close);
  // Closes the connection that would be closed first to make room, if any: for when the
  // process ran out of file descriptors, whatever the count says.
  bool CloseOne();
  // Holds at most `max` connections from now on (never raises the cap, never below 1), closing
  // those above it that may be closed, first in line first. For when descriptors ran out with
  // fewer connections open than the cap: the rest of the process needs some too. Returns how
  // many it closed.
  size_t LowerCap(size_t max);

  size_t size() const { return size_; }
  size_t held_by(const std::string& address) const;
  const Limits& limits() const { return limits_; }

 private:
  // Which connections go first, oldest first within each: a stranger's idle one, then one
  // still without a whole request header, then one whose body is still coming, then an
  // authenticated client's idle one. The rest are never closed to make room.
  enum Rank { kStrangerIdle, kStrangerHeader, kStrangerBody, kAuthenticatedIdle, kKept, kRanks };

  struct Record {
    std::string address;
    std::function<void()> close;
    ConnectionPhase phase = ConnectionPhase::kHeader;
    bool authenticated = false;
    Rank rank = kStrangerHeader;
    Slot* slot = nullptr;
  };
  struct AddressEntry {
    size_t held = 0;
    bool refused = false;  // refused since it last had room
  };

  static Rank RankOf(const Record& record);
  // Moves the record to the back of its rank's list if its rank changed: the back is the
  // newest, so each list stays ordered by how long its connections have been in that rank.
  void Rerank(std::list<Record>::iterator record);
  // Closes the first connection in rank order, of `address` only when it is given.
  bool CloseFirst(const std::string* address);
  void Remove(std::list<Record>::iterator record);

  Limits limits_;
  std::list<Record> ranks_[kRanks];
  std::unordered_map<std::string, AddressEntry> addresses_;
  size_t size_ = 0;
};

}  // namespace cohort::api
