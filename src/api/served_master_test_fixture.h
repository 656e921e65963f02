// A test fixture: the real Master (an in-memory state store, a manual clock, a hand-run loop)
// behind the real ApiServer, served without a socket, with one user, ada, a member of team
// default, and her token.
#pragma once

#include <gtest/gtest.h>
#include <unistd.h>

#include <boost/asio/io_context.hpp>
#include <filesystem>
#include <map>
#include <memory>
#include <string>

#include "api/api_server.h"
#include "api/hand_run_loop.h"
#include "scheduler/scheduler.h"
#include "testing/master_deps.h"
#include "testing/memory_state_store.h"

namespace cohort::api {

class ServedMaster : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ =
        std::filesystem::temp_directory_path() /
        ("cohort-" + std::string(::testing::UnitTest::GetInstance()->current_test_suite()->name()) +
         "-" + std::to_string(::getpid()));
    std::filesystem::remove_all(dir_);
    master::MasterConfig config;
    config.data_dir = dir_.string();
    config.fail_stop = [](const Status& s) { FAIL() << s.ToString(); };
    Configure(config);
    master::MasterDeps deps = testing::TestMasterDeps(config.data_dir, disk_.Reopen());
    deps.objects = Objects(std::move(deps.objects));
    auto state_disk = std::make_unique<FixedDiskSpace>(1ULL << 40, dir_.string());
    state_disk_ = state_disk.get();
    deps.state_disk = std::move(state_disk);
    auto m = master::Master::Create(config, std::move(deps), clock_, loop_);
    ASSERT_TRUE(m.ok()) << m.status().ToString();
    master_ = std::move(m).value();
    api_ = std::make_unique<ApiServer>(ioc_, *master_);
    ASSERT_TRUE(
        master_->accounts()
            .CreateUser(User{"ada", false, {{"default", TeamRole::kMember}}, {}, {}, {}, {}})
            .ok());
    token_ = master_->accounts().Issue(TokenKind::kUser, "ada", "test")->token;
  }
  void TearDown() override {
    api_->Stop();
    api_.reset();
    master_.reset();
    std::filesystem::remove_all(dir_);
  }

  // A test's own settings of the master, before it is made.
  virtual void Configure(master::MasterConfig&) {}
  // The master's object store (a directory store at <data dir>/store), or one that wraps it.
  virtual std::unique_ptr<store::ObjectStore> Objects(std::unique_ptr<store::ObjectStore> store) {
    return store;
  }

  // One request as ada, answered exactly once once the loop has settled.
  HttpResponse Serve(std::string method, std::string path,
                     std::map<std::string, std::string> query = {}, std::string body = {}) {
    HttpRequest request;
    request.method = std::move(method);
    request.path = std::move(path);
    request.query = std::move(query);
    request.body = std::move(body);
    request.headers["authorization"] = "Bearer " + token_;
    request.remote = "127.0.0.1:40000";
    auto recorder = std::make_shared<RecordingResponder>();
    api_->Handle(std::move(request), recorder);
    EXPECT_TRUE(loop_.SettleUntil(ioc_, [&] { return recorder->answers > 0; }));
    EXPECT_EQ(recorder->answers, 1);
    return recorder->response;
  }

  std::filesystem::path dir_;
  boost::asio::io_context ioc_;
  HandRunLoop loop_;
  ManualClock clock_;
  testing::MemoryStateStore disk_;
  FixedDiskSpace* state_disk_ = nullptr;  // the free space the master sees; owned by it
  std::unique_ptr<master::Master> master_;
  std::unique_ptr<ApiServer> api_;
  std::string token_;
};

}  // namespace cohort::api
