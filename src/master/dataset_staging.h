// Datasets fetched before the GPUs are taken (docs/data.md, "Placement and the pull"). What each
// node's cache holds, from its agent's reports; which nodes a waiting job prefers (those that
// hold every dataset it reads); and the jobs held back while their datasets are fetched to the
// nodes the scheduler chose, with no GPU held meanwhile, or fetched ahead to the nodes of their
// reservation. In memory only: a master that restarts learns the caches again within a minute,
// and a job it was staging is placed as if it never had been.
//
// A job is held back at most once per attempt: once its fetch ends (the nodes hold its
// datasets, a node could not fetch them, a node went away, or kLimit passed), the next
// placement starts it wherever it lands, pulling there whatever the node lacks.
#pragma once

#include <functional>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "common/time.h"
#include "master/job_book.h"
#include "model/agent_protocol.h"
#include "model/job.h"
#include "model/plan.h"

namespace cohort::master {

class DatasetStaging {
 public:
  // A job held back longer than this starts anyway.
  static constexpr Duration kLimit = std::chrono::minutes(30);

  explicit DatasetStaging(const JobBook& jobs) : jobs_(jobs) {}
  // Off: no job is held back nor has its datasets fetched ahead; nodes are still preferred.
  void set_enabled(bool on) { enabled_ = on; }

  // What a node's agent reported: the versions its cache holds (unset: unchanged), and the
  // fetches it was asked for that failed.
  void NoteReport(const std::string& node, const std::optional<std::vector<std::string>>& cached,
                  const std::map<std::string, std::string>& failures);
  // The node is gone: what it held is forgotten.
  void ForgetNode(const std::string& node);

  // The nodes whose caches hold every dataset the job reads (none for a job that reads none).
  std::set<std::string> PreferredNodes(const Job& job) const;

  // Whether the job is held back while its datasets are fetched.
  bool HeldBack(JobId id) const { return held_.count(id) > 0; }
  // The scheduler placed the job: the nodes of `placement` that lack some dataset of it, where
  // it is now held back while they fetch, or none if it may start now.
  std::vector<std::string> HoldBack(const Job& job, const std::vector<TaskPlacement>& placement,
                                    Timestamp now);
  // The nodes a waiting job's reservation holds (none: it has none): its datasets are fetched
  // there ahead of its start. Returns the nodes that were not asked before.
  std::vector<std::string> NoteReserved(const Job& job, const std::vector<std::string>& nodes);
  void ForgetReserved(JobId id) { ahead_.erase(id); }

  // A held-back job whose fetch is over; `why` is empty when its nodes hold its datasets.
  struct Released {
    JobId job = 0;
    std::string why;
  };
  // Ends the holds that are over (see above): `usable` says whether a node may still run work.
  std::vector<Released> Settle(Timestamp now,
                               const std::function<bool(const std::string&)>& usable);

  // What `node` should fetch now, with the store's access of the job that wants each (none
  // while it is being issued), at most kMaxPrefetchesPerNode.
  using AccessFor = std::function<std::optional<StoreAccess>(const Job&)>;
  std::vector<DatasetPrefetch> PrefetchFor(const std::string& node, const AccessFor& access) const;

  // The ids of the versions a job reads (store::DatasetCacheId).
  static std::vector<std::string> IdsOf(const Job& job);

 private:
  struct Hold {
    int attempt = 0;  // the attempt it was held back for
    std::vector<std::string> nodes;
    Timestamp since;
  };
  bool Holds(const std::string& node, const std::vector<std::string>& ids) const;
  // The first failure a node reported of these ids, if any.
  std::optional<std::string> FailureOf(const std::string& node,
                                       const std::vector<std::string>& ids) const;

  const JobBook& jobs_;
  bool enabled_ = true;
  std::map<std::string, std::set<std::string>> cached_;  // node -> ids its cache holds
  std::map<std::string, std::map<std::string, std::string>> failures_;  // node -> id -> why
  std::map<JobId, Hold> held_;
  std::map<JobId, int> staged_;                      // the attempt a job was last held back for
  std::map<JobId, std::vector<std::string>> ahead_;  // reserved nodes
};

}  // namespace cohort::master
