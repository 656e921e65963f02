#include "api/change_stream.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "api/hand_run_loop.h"

namespace cohort::api {
namespace {

using ::testing::HasSubstr;

// A client that takes each chunk only when the test says: what a slow reader looks like.
class SlowClient final : public Responder {
 public:
  void Send(HttpResponse response) override { status = response.status; }
  void StartStream(int s, std::string,
                   std::vector<std::pair<std::string, std::string>> = {}) override {
    status = s;
  }
  void WriteChunk(std::string data, std::function<void(bool)> done) override {
    body += data;
    ++chunks;
    held.push_back(std::move(done));
  }
  void EndStream() override { ended = true; }
  bool closed() const override { return gone; }
  void OnClose(std::function<void()> callback) override { on_close = std::move(callback); }
  void TakeAll() {
    auto done = std::move(held);
    for (auto& d : done) d(!gone);
  }
  int status = 0;
  std::string body;
  int chunks = 0;
  bool ended = false;
  bool gone = false;
  std::vector<std::function<void(bool)>> held;
  std::function<void()> on_close;
};

TEST(ChangeStreams, ChangesGoOutAsServerSentEventsCoalescedPerTurn) {
  boost::asio::io_context ioc;
  ChangeStreams streams(ioc);
  auto client = std::make_shared<RecordingResponder>();
  streams.Open(client);
  EXPECT_EQ(client->response.status, 200);
  EXPECT_EQ(client->response.content_type, "text/event-stream");
  EXPECT_EQ(client->response.body, "retry: 2000\n: connected\n\n");
  streams.JobChanged(7);
  streams.JobChanged(7);
  streams.NodeChanged("node-1");
  EXPECT_EQ(client->response.body, "retry: 2000\n: connected\n\n") << "not inside the change";
  ioc.poll();
  EXPECT_EQ(client->response.body,
            "retry: 2000\n: connected\n\n"
            "event: job\ndata: {\"id\": 7}\n\n"
            "event: node\ndata: {\"id\":\"node-1\"}\n\n");
}

TEST(ChangeStreams, ASlowClientGetsWhatChangedMeanwhileOnceAndTooMuchAsResync) {
  boost::asio::io_context ioc;
  ChangeStreams streams(ioc);
  auto client = std::make_shared<SlowClient>();
  streams.Open(client);
  ASSERT_EQ(client->chunks, 1);
  for (int round = 0; round < 3; ++round) {
    streams.JobChanged(1);
    ioc.poll();
  }
  EXPECT_EQ(client->chunks, 1) << "nothing more while a chunk is under way";
  client->TakeAll();
  EXPECT_EQ(client->chunks, 2);
  EXPECT_THAT(client->body, ::testing::EndsWith("event: job\ndata: {\"id\": 1}\n\n"));
  // More ids than a stream keeps: one resync instead.
  for (JobId id = 0; id < static_cast<JobId>(kMaxPendingIds) + 5; ++id) streams.JobChanged(id);
  ioc.poll();
  client->TakeAll();
  EXPECT_THAT(client->body, ::testing::EndsWith("event: resync\ndata: {}\n\n"));
  EXPECT_EQ(client->chunks, 3);
}

TEST(ChangeStreams, TheirNumberIsBoundedAndAClientThatLeavesFreesItsPlace) {
  boost::asio::io_context ioc;
  ChangeStreams streams(ioc, /*max_streams=*/2);
  auto a = std::make_shared<SlowClient>();
  auto b = std::make_shared<SlowClient>();
  auto c = std::make_shared<SlowClient>();
  streams.Open(a);
  streams.Open(b);
  streams.Open(c);
  EXPECT_EQ(c->status, 503);
  EXPECT_EQ(streams.size(), 2u);
  a->gone = true;
  a->on_close();
  EXPECT_EQ(streams.size(), 1u);
  auto d = std::make_shared<SlowClient>();
  streams.Open(d);
  EXPECT_EQ(d->status, 200);
  streams.CloseAll();
  EXPECT_TRUE(b->ended);
  EXPECT_TRUE(d->ended);
  EXPECT_EQ(streams.size(), 0u);
}

}  // namespace
}  // namespace cohort::api
