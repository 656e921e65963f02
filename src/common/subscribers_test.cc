#include "common/subscribers.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace cohort {
namespace {

using ::testing::ElementsAre;

TEST(Subscribers, NotifiesOnlyTheKeyInSubscriptionOrder) {
  Subscribers<int> subs;
  std::vector<std::string> calls;
  subs.Subscribe(1, [&] { calls.push_back("a"); });
  subs.Subscribe(2, [&] { calls.push_back("other"); });
  subs.Subscribe(1, [&] { calls.push_back("b"); });
  subs.Notify(1);
  subs.Notify(3);
  EXPECT_THAT(calls, ElementsAre("a", "b"));
  EXPECT_TRUE(subs.Has(2));
  EXPECT_FALSE(subs.Has(3));
}

TEST(Subscribers, CallbacksMayChangeTheListWhileNotified) {
  Subscribers<int> subs;
  std::vector<std::string> calls;
  Subscribers<int>::Id self = 0, later = 0;
  self = subs.Subscribe(1, [&] {
    calls.push_back("self");
    subs.Unsubscribe(self);   // destroys the stored callback while it runs
    subs.Unsubscribe(later);  // not called any more
    subs.Subscribe(1, [&] { calls.push_back("added"); });  // from the next notification on
  });
  later = subs.Subscribe(1, [&] { calls.push_back("later"); });
  subs.Notify(1);
  subs.Notify(1);
  EXPECT_THAT(calls, ElementsAre("self", "added"));
  EXPECT_EQ(subs.size(), 1u);
  subs.Unsubscribe(12345);  // unknown: ignored
}

}  // namespace
}  // namespace cohort
