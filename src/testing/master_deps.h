// MasterDeps for a test's master, opened as cohortd opens them for a real one: the state store
// the test gives, a metric store in <data_dir>/metrics.db (the directory made if missing), and a
// scheduler.
#pragma once

#include <filesystem>
#include <memory>
#include <string>

#include "common/status.h"
#include "master/master.h"
#include "scheduler/scheduler.h"
#include "state/metric_store.h"
#include "store/directory_store.h"

namespace cohort::testing {

inline master::MasterDeps TestMasterDeps(
    const std::string& data_dir, std::unique_ptr<state::StateStore> store,
    std::unique_ptr<scheduler::Scheduler> scheduler = scheduler::NewScheduler()) {
  std::error_code ec;
  std::filesystem::create_directories(data_dir, ec);
  auto metrics = state::OpenSqliteMetricStore(data_dir + "/metrics.db");
  COHORT_CHECK(metrics.ok());
  // Where MasterConfig::store points agents by default when data_dir is the master's.
  auto objects = store::OpenDirectoryStore(data_dir + "/store");
  COHORT_CHECK(objects.ok());
  return master::MasterDeps{std::move(store), std::move(metrics).value(), std::move(scheduler),
                            nullptr, std::move(objects).value()};
}

}  // namespace cohort::testing
