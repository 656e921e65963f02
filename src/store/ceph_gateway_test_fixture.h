// A real S3 server for tests: one single-node Ceph cluster with its RADOS Gateway per test binary
// (scripts/ceph.sh; about 4 s to start), with a bucket made for the tests. Register it in main
// or at namespace scope:
//
//   ::testing::AddGlobalTestEnvironment(new CephGateway);   // gtest owns it
//
// then CephGateway::Get()->connection() in tests. The cluster is stopped at the end of the
// binary, whether its tests passed or not. If it does not start, the binary FAILS with the tail
// of the daemons' logs: a test that needs Ceph is never skipped.
#pragma once

#include <gtest/gtest.h>
#include <signal.h>
#include <unistd.h>
#include <nlohmann/json.hpp>

#include <chrono>
#include <filesystem>
#include <string>
#include <vector>

#include "os/process.h"
#include "store/s3_config.h"
#include "store/s3_store.h"

#ifndef COHORT_SOURCE_DIR
#error "COHORT_SOURCE_DIR must name the source tree (for scripts/ceph.sh)"
#endif

namespace cohort::store {

class CephGateway : public ::testing::Environment {
 public:
  static constexpr const char* kBucket = "cohort-test";

  CephGateway() { instance_ = this; }
  static CephGateway* Get() { return instance_; }

  void SetUp() override {
    dir_ = std::filesystem::temp_directory_path() / ("cohort-ceph-" + std::to_string(::getpid()));
    std::filesystem::remove_all(dir_);
    const std::string json = dir_.string() + ".json";
    const std::string log = dir_.string() + ".log";
    auto start = std::chrono::steady_clock::now();
    // If this binary is killed before its teardown, the cluster stops when it is gone.
    SpawnOptions options;
    options.env["CEPH_OWNER_PID"] = std::to_string(::getpid());
    int rc = RunToCompletion(
        {"/bin/bash", "-c", "\"$0\" start \"$1\" >\"$2\" 2>\"$3\"",
         std::string(COHORT_SOURCE_DIR) + "/scripts/ceph.sh", dir_.string(), json, log},
        options);
    start_seconds_ =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    std::string out = ReadFileOrEmpty(json);
    std::string progress = ReadFileOrEmpty(log);
    std::filesystem::remove(json);
    std::filesystem::remove(log);
    ASSERT_EQ(rc, 0) << "scripts/ceph.sh start failed (exit " << rc << "):\n"
                     << progress << Tails();
    try {
      auto j = nlohmann::json::parse(out);
      connection_.endpoint = j.at("endpoint").get<std::string>();
      connection_.region = j.at("region").get<std::string>();
      connection_.access_key = j.at("access_key").get<std::string>();
      connection_.secret_key = j.at("secret_key").get<std::string>();
      role_arn_ = j.at("role_arn").get<std::string>();
      connection_.role_arn = role_arn_;
    } catch (const std::exception& e) {
      FAIL() << "scripts/ceph.sh start printed no connection JSON (" << e.what() << "): " << out;
    }
    std::printf("Ceph RADOS Gateway at %s started in %.1f s (%s)\n", connection_.endpoint.c_str(),
                start_seconds_, dir_.c_str());
    auto store = S3Store::Open(connection_, S3Location{.bucket = kBucket, .prefix = ""});
    ASSERT_TRUE(store.ok()) << store.status().ToString();
    Status made = (*store)->CreateBucket();
    ASSERT_TRUE(made.ok()) << made.ToString() << Tails();
    up_ = true;
  }

  void TearDown() override {
    if (dir_.empty() || !std::filesystem::exists(dir_ / "ceph.conf")) return;
    std::vector<pid_t> daemons;
    for (const char* name : {"mon", "osd", "rgw"}) {
      daemons.push_back(ReadPidFile((dir_ / "run" / (std::string(name) + ".pid")).string()));
    }
    const std::string conf = (dir_ / "ceph.conf").string();
    auto start = std::chrono::steady_clock::now();
    int rc = RunToCompletion(
        {"/bin/bash", std::string(COHORT_SOURCE_DIR) + "/scripts/ceph.sh", "stop", dir_.string()});
    EXPECT_EQ(rc, 0) << "scripts/ceph.sh stop " << dir_;
    std::printf("Ceph stopped in %.1f s\n",
                std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());
    // Nothing is left behind: no daemon (a zombie has no command line), no directory.
    for (pid_t pid : daemons) {
      EXPECT_EQ(CommandLine(pid).find(conf), std::string::npos) << "a Ceph daemon outlived stop";
    }
    EXPECT_FALSE(std::filesystem::exists(dir_)) << dir_;
  }

  bool up() const { return up_; }
  const S3Connection& connection() const { return connection_; }
  const std::string& role_arn() const { return role_arn_; }
  const std::filesystem::path& dir() const { return dir_; }
  double start_seconds() const { return start_seconds_; }
  // The gateway's process (to pause it), or 0.
  pid_t GatewayPid() const { return ReadPidFile((dir_ / "run" / "rgw.pid").string()); }

  // The last lines of every daemon's log, for a failure message.
  std::string Tails() const {
    std::string out;
    std::error_code ec;
    for (const auto& entry : std::filesystem::directory_iterator(dir_ / "log", ec)) {
      std::string text = ReadFileOrEmpty(entry.path().string());
      size_t from = text.size();
      for (int lines = 0; lines < 30 && from > 0; ++lines) {
        size_t nl = text.rfind('\n', from - 1);
        from = nl == std::string::npos ? 0 : nl;
        if (nl == std::string::npos) break;
      }
      out += "\n==> " + entry.path().string() + " (last lines) <==\n" + text.substr(from);
    }
    return out;
  }

 private:
  static inline CephGateway* instance_ = nullptr;
  std::filesystem::path dir_;
  S3Connection connection_;
  std::string role_arn_;
  double start_seconds_ = 0;
  bool up_ = false;
};

}  // namespace cohort::store
