#include "api/wait_list.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace cohort::api {
namespace {

using ::testing::ElementsAre;

// Records what it was sent; a long poll needs nothing else.
class FakeResponder : public Responder {
 public:
  void Send(HttpResponse response) override { sent.push_back(response.body); }
  void StartStream(int, std::string,
                   std::vector<std::pair<std::string, std::string>> = {}) override {}
  void WriteChunk(std::string, std::function<void(bool)>) override {}
  void EndStream() override {}
  bool closed() const override { return false; }
  std::vector<std::string> sent;
};

class WaitListTest : public ::testing::Test {
 protected:
  boost::asio::io_context ioc_;
  int version_ = 1;  // what every answer reports
  WaitList<std::string> list_{
      ioc_, [this](const std::string& key, Responder& r) {
        r.Send(HttpResponse{200, "text/plain", key + "@" + std::to_string(version_)});
      }};
};

TEST_F(WaitListTest, WakeAnswersOnlyWaitersBehindTheVersion) {
  auto a = std::make_shared<FakeResponder>();
  auto b = std::make_shared<FakeResponder>();
  auto other = std::make_shared<FakeResponder>();
  list_.Wait("n1", 1, std::chrono::seconds(60), a);
  list_.Wait("n1", 2, std::chrono::seconds(60), b);
  list_.Wait("n2", 1, std::chrono::seconds(60), other);
  version_ = 2;
  list_.Wake("n1", 2);
  EXPECT_THAT(a->sent, ElementsAre("n1@2"));
  EXPECT_TRUE(b->sent.empty());
  version_ = 3;
  list_.Wake("n1", 3);
  list_.Wake("n1", 4);  // answered already: not again
  EXPECT_THAT(b->sent, ElementsAre("n1@3"));
  EXPECT_THAT(a->sent, ElementsAre("n1@2"));
  EXPECT_TRUE(list_.Has("n2"));
  EXPECT_FALSE(list_.Has("n1"));
  ioc_.poll();  // the cancelled timers run and answer nothing
  EXPECT_EQ(a->sent.size() + b->sent.size(), 2u);
  list_.CancelAll();
  ioc_.poll();
  EXPECT_TRUE(other->sent.empty());
}

TEST_F(WaitListTest, ATimeoutAnswersWithTheStateAsItIs) {
  auto a = std::make_shared<FakeResponder>();
  list_.Wait("n1", 5, std::chrono::milliseconds(1), a);
  ioc_.run_for(std::chrono::milliseconds(200));
  EXPECT_THAT(a->sent, ElementsAre("n1@1"));
  EXPECT_FALSE(list_.Has("n1"));
  list_.Wake("n1", 9);
  EXPECT_EQ(a->sent.size(), 1u);
}

}  // namespace
}  // namespace cohort::api
