// Usage reports: GPU and CPU time, jobs and queueing delay per team, user and period, read back
// from the store, where every hold and milestone is written with its job (JobBook::NoteHold;
// master/usage_report.h, docs/security.md "Audit and accounting").
#pragma once

#include <functional>
#include <memory>

#include "common/status.h"
#include "common/time.h"
#include "master/usage_reader.h"
#include "master/usage_report.h"
#include "state/state_store.h"

namespace cohort::master {

class UsageReports {
 public:
  UsageReports(state::StateStore& store, const Clock& clock) : store_(store), clock_(clock) {}

  // kInvalidArgument for a query that is empty, too long for its periods, or that would have
  // too many rows.
  StatusOr<UsageReport> Compute(const UsageQuery& query);
  // The same, computed on the usage reader's thread once StartReader has been called (a report
  // can take a third of a second: master/usage_reader.h); `done` runs on the event loop.
  // Without a reader, at once. kUnavailable when too many reports are under way.
  void Compute(const UsageQuery& query, std::function<void(StatusOr<UsageReport>)> done);
  // `store`: another connection to the master's database, read only by the reader's thread;
  // `post` runs work on the event loop.
  void StartReader(std::unique_ptr<state::StateStore> store, UsageReader::Post post);

 private:
  state::StateStore& store_;
  const Clock& clock_;
  std::unique_ptr<UsageReader> reader_;  // null: reports run on the event loop
};

}  // namespace cohort::master
