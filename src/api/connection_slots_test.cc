// Which connection gives its place to a new one, without sockets (the server's own tests do the
// same against real ones).
#include "api/connection_slots.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <memory>
#include <string>
#include <vector>

namespace cohort::api {
namespace {

using ::testing::ElementsAre;
using ::testing::IsEmpty;

// Connections named in the order they arrived; `closed` lists those closed to make room.
class Connections {
 public:
  explicit Connections(ConnectionSlots::Limits limits) : slots_(limits) {}

  ConnectionSlots::Taken Open(const std::string& name, const std::string& address = "10.0.0.1") {
    return slots_.Take(address, [this, name] { closed.push_back(name); });
  }
  // Opens one that must get a place, and keeps it.
  ConnectionSlots::Slot& Hold(const std::string& name, const std::string& address = "10.0.0.1") {
    auto taken = Open(name, address);
    EXPECT_NE(taken.slot, nullptr) << name;
    held_.push_back(std::move(taken.slot));
    return *held_.back();
  }
  ConnectionSlots& slots() { return slots_; }
  std::vector<std::string> closed;

 private:
  ConnectionSlots slots_;
  std::vector<std::unique_ptr<ConnectionSlots::Slot>> held_;
};

TEST(ConnectionSlots, AStrangersIdleConnectionGoesFirstThenOneWithoutAWholeHeader) {
  Connections c({.max_connections = 3, .max_per_address = 0});
  c.Hold("header-old");
  c.Hold("idle").Enter(ConnectionPhase::kIdle);
  c.Hold("header-new");
  auto taken = c.Open("new");
  EXPECT_NE(taken.slot, nullptr);
  EXPECT_EQ(taken.closed, 1u);
  EXPECT_THAT(c.closed, ElementsAre("idle"));
  auto again = c.Open("newer");
  EXPECT_THAT(c.closed, ElementsAre("idle", "header-old"));
  EXPECT_EQ(c.slots().size(), 3u);
}

TEST(ConnectionSlots, IdleConnectionsGoOldestIdleFirst) {
  Connections c({.max_connections = 3, .max_per_address = 0});
  auto& a = c.Hold("a");
  auto& b = c.Hold("b");
  auto& d = c.Hold("d");
  b.Enter(ConnectionPhase::kIdle);
  a.Enter(ConnectionPhase::kIdle);
  d.Enter(ConnectionPhase::kIdle);
  // a served another request and is idle again: now the newest idle.
  a.Enter(ConnectionPhase::kServing);
  a.Enter(ConnectionPhase::kIdle);
  auto x = c.Open("x");
  auto y = c.Open("y");
  auto z = c.Open("z");
  EXPECT_THAT(c.closed, ElementsAre("b", "d", "a"));
}

TEST(ConnectionSlots, ARequestBeingServedIsNeverClosedAndTheNewcomerIsRefused) {
  Connections c({.max_connections = 2, .max_per_address = 0});
  c.Hold("long-poll").Enter(ConnectionPhase::kServing);
  c.Hold("stream").Enter(ConnectionPhase::kServing);
  auto taken = c.Open("new");
  EXPECT_EQ(taken.slot, nullptr);
  EXPECT_EQ(taken.refusal, ConnectionSlots::Refusal::kServerFull);
  EXPECT_THAT(c.closed, IsEmpty());
  EXPECT_EQ(c.slots().size(), 2u);
}

TEST(ConnectionSlots, AnAuthenticatedClientsConnectionGoesAfterEveryStrangersAndOnlyWhenIdle) {
  Connections c({.max_connections = 4, .max_per_address = 0});
  auto& agent = c.Hold("agent");
  agent.MarkAuthenticated();
  agent.Enter(ConnectionPhase::kIdle);
  auto& user = c.Hold("user");
  user.MarkAuthenticated();
  user.Enter(ConnectionPhase::kHeader);  // its next request is on its way
  c.Hold("stranger-body").Enter(ConnectionPhase::kBody);
  c.Hold("stranger-header");
  // Each newcomer's request is being served at once.
  std::vector<ConnectionSlots::Taken> newcomers;
  for (std::string name : {"1", "2", "3", "4"}) {
    newcomers.push_back(c.Open(name));
    if (newcomers.back().slot) newcomers.back().slot->Enter(ConnectionPhase::kServing);
  }
  EXPECT_THAT(c.closed, ElementsAre("stranger-header", "stranger-body", "agent"));
  EXPECT_EQ(newcomers.back().refusal, ConnectionSlots::Refusal::kServerFull);
  EXPECT_TRUE(user.held()) << "a request on its way is not cut off";
}

TEST(ConnectionSlots, AnAuthenticatedIdleConnectionGivesWayWhenNoStrangersCan) {
  Connections c({.max_connections = 2, .max_per_address = 0});
  auto& agent = c.Hold("agent");
  agent.MarkAuthenticated();
  agent.Enter(ConnectionPhase::kIdle);
  auto& user = c.Hold("user");
  user.MarkAuthenticated();
  user.Enter(ConnectionPhase::kHeader);
  auto taken = c.Open("new");
  EXPECT_NE(taken.slot, nullptr);
  EXPECT_THAT(c.closed, ElementsAre("agent"));
  EXPECT_FALSE(agent.held());
  // The user's request, half read, stays; so does the newcomer until it is older.
  auto refused = c.Open("newer");
  EXPECT_THAT(c.closed, ElementsAre("agent", "new"));
  EXPECT_TRUE(user.held());
}

TEST(ConnectionSlots, AnAddressAtItsCapGivesUpItsOwnConnectionsNotOthers) {
  Connections c({.max_connections = 10, .max_per_address = 2});
  c.Hold("other", "10.0.0.9").Enter(ConnectionPhase::kIdle);
  auto& agent = c.Hold("agent", "10.0.0.1");
  agent.MarkAuthenticated();
  agent.Enter(ConnectionPhase::kServing);  // its long poll
  c.Hold("task-idle", "10.0.0.1").Enter(ConnectionPhase::kIdle);
  auto taken = c.Open("task-new", "10.0.0.1");
  EXPECT_NE(taken.slot, nullptr);
  EXPECT_THAT(c.closed, ElementsAre("task-idle"));
  EXPECT_EQ(c.slots().held_by("10.0.0.1"), 2u);

  taken.slot->Enter(ConnectionPhase::kServing);
  auto refused = c.Open("task-third", "10.0.0.1");
  EXPECT_EQ(refused.slot, nullptr);
  EXPECT_EQ(refused.refusal, ConnectionSlots::Refusal::kAddressFull);
  EXPECT_TRUE(refused.first_refusal);
  EXPECT_FALSE(c.Open("task-fourth", "10.0.0.1").first_refusal) << "one log line a spell";
  EXPECT_THAT(c.closed, ElementsAre("task-idle")) << "another address's idle one stays";
  EXPECT_NE(c.Open("elsewhere", "10.0.0.7").slot, nullptr);

  taken.slot.reset();  // room again for 10.0.0.1
  EXPECT_NE(c.Open("later", "10.0.0.1").slot, nullptr);
}

TEST(ConnectionSlots, OutOfDescriptorsTheFirstInLineIsClosedWhateverTheCount) {
  Connections c({.max_connections = 100, .max_per_address = 0});
  c.Hold("serving").Enter(ConnectionPhase::kServing);
  EXPECT_FALSE(c.slots().CloseOne());
  c.Hold("header");
  c.Hold("idle").Enter(ConnectionPhase::kIdle);
  EXPECT_TRUE(c.slots().CloseOne());
  EXPECT_TRUE(c.slots().CloseOne());
  EXPECT_FALSE(c.slots().CloseOne());
  EXPECT_THAT(c.closed, ElementsAre("idle", "header"));
  EXPECT_EQ(c.slots().size(), 1u);
}

TEST(ConnectionSlots, ALoweredCapClosesWhatItCanAboveItAndThenHolds) {
  Connections c({.max_connections = 100, .max_per_address = 0});
  c.Hold("serving").Enter(ConnectionPhase::kServing);
  c.Hold("idle-1").Enter(ConnectionPhase::kIdle);
  c.Hold("header");
  c.Hold("idle-2").Enter(ConnectionPhase::kIdle);
  EXPECT_EQ(c.slots().LowerCap(2), 2u);
  EXPECT_THAT(c.closed, ElementsAre("idle-1", "idle-2"));
  EXPECT_EQ(c.slots().limits().max_connections, 2u);
  EXPECT_EQ(c.slots().LowerCap(50), 0u) << "a cap is never raised";
  EXPECT_EQ(c.slots().limits().max_connections, 2u);
  c.Hold("new", "10.0.0.9");
  EXPECT_THAT(c.closed, ElementsAre("idle-1", "idle-2", "header"))
      << "the new one takes the unfinished one's place, not a third";
  EXPECT_EQ(c.slots().LowerCap(0), 1u) << "only what may be closed";
  EXPECT_THAT(c.closed, ElementsAre("idle-1", "idle-2", "header", "new"));
  EXPECT_EQ(c.slots().limits().max_connections, 1u);
  EXPECT_EQ(c.slots().size(), 1u);
}

TEST(ConnectionSlots, AReleasedPlaceIsGivenBackOnce) {
  Connections c({.max_connections = 1, .max_per_address = 1});
  {
    auto taken = c.Open("a");
    taken.slot->Release();
    EXPECT_EQ(c.slots().size(), 0u);
    EXPECT_EQ(c.slots().held_by("10.0.0.1"), 0u);
  }  // destroyed after its release: nothing more given back
  EXPECT_EQ(c.slots().size(), 0u);
  auto b = c.Open("b");
  auto d = c.Open("d");  // b is closed for d; b's slot no longer holds a place
  EXPECT_FALSE(b.slot->held());
  b.slot.reset();
  EXPECT_EQ(c.slots().size(), 1u);
  EXPECT_EQ(c.slots().held_by("10.0.0.1"), 1u);
}

}  // namespace
}  // namespace cohort::api
