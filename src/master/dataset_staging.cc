#include "master/dataset_staging.h"

#include <algorithm>

#include "common/units.h"
#include "master/artifacts.h"
#include "store/dataset_layout.h"

namespace cohort::master {

std::vector<std::string> DatasetStaging::IdsOf(const Job& job) {
  std::vector<std::string> ids;
  if (job.spec.datasets.empty()) return ids;
  for (const TaskDataset& d : Artifacts::DatasetsOf(job)) {
    if (auto id = store::DatasetCacheId(d.manifest_key); id.ok()) ids.push_back(*id);
  }
  return ids;
}

void DatasetStaging::NoteReport(const std::string& node,
                                const std::optional<std::vector<std::string>>& cached,
                                const std::map<std::string, std::string>& failures) {
  if (cached) cached_[node] = std::set<std::string>(cached->begin(), cached->end());
  if (failures.empty()) {
    failures_.erase(node);
  } else {
    failures_[node] = failures;
  }
}

void DatasetStaging::ForgetNode(const std::string& node) {
  cached_.erase(node);
  failures_.erase(node);
}

bool DatasetStaging::Holds(const std::string& node, const std::vector<std::string>& ids) const {
  auto it = cached_.find(node);
  if (it == cached_.end()) return ids.empty();
  return std::all_of(ids.begin(), ids.end(),
                     [&](const std::string& id) { return it->second.count(id) > 0; });
}

std::optional<std::string> DatasetStaging::FailureOf(const std::string& node,
                                                     const std::vector<std::string>& ids) const {
  auto it = failures_.find(node);
  if (it == failures_.end()) return std::nullopt;
  for (const auto& id : ids) {
    if (auto f = it->second.find(id); f != it->second.end()) return f->second;
  }
  return std::nullopt;
}

std::set<std::string> DatasetStaging::PreferredNodes(const Job& job) const {
  std::set<std::string> nodes;
  if (job.spec.datasets.empty()) return nodes;
  const std::vector<std::string> ids = IdsOf(job);
  for (const auto& [node, held] : cached_) {
    if (Holds(node, ids)) nodes.insert(node);
  }
  return nodes;
}

std::vector<std::string> DatasetStaging::HoldBack(const Job& job,
                                                  const std::vector<TaskPlacement>& placement,
                                                  Timestamp now) {
  std::vector<std::string> lacking;
  if (!enabled_ || job.spec.datasets.empty()) return lacking;
  const int attempt = job.attempt + 1;
  if (auto it = staged_.find(job.id); it != staged_.end() && it->second == attempt) return lacking;
  const std::vector<std::string> ids = IdsOf(job);
  for (const auto& p : placement) {
    if (!Holds(p.node_id, ids) &&
        std::find(lacking.begin(), lacking.end(), p.node_id) == lacking.end()) {
      lacking.push_back(p.node_id);
    }
  }
  if (lacking.empty()) return lacking;
  held_[job.id] = Hold{attempt, lacking, now};
  staged_[job.id] = attempt;
  return lacking;
}

std::vector<std::string> DatasetStaging::NoteReserved(const Job& job,
                                                      const std::vector<std::string>& nodes) {
  if (!enabled_ || job.spec.datasets.empty() || nodes.empty()) {
    ahead_.erase(job.id);
    return {};
  }
  std::vector<std::string> added;
  std::vector<std::string>& known = ahead_[job.id];
  for (const auto& n : nodes) {
    if (std::find(known.begin(), known.end(), n) == known.end()) added.push_back(n);
  }
  known = nodes;
  return added;
}

std::vector<DatasetStaging::Released> DatasetStaging::Settle(
    Timestamp now, const std::function<bool(const std::string&)>& usable) {
  std::vector<Released> released;
  for (auto it = held_.begin(); it != held_.end();) {
    const JobId id = it->first;
    const Hold& hold = it->second;
    const Job* job = jobs_.Find(id);
    std::optional<std::string> why;
    if (!job || !jobs_.pending().count(id) || job->attempt + 1 != hold.attempt) {
      it = held_.erase(it);  // killed, or placed some other way: nothing to release
      continue;
    }
    const std::vector<std::string> ids = IdsOf(*job);
    bool all_there = true;
    for (const auto& node : hold.nodes) {
      if (!usable(node)) {
        why = "node " + node + " can no longer run it";
        break;
      }
      if (auto failure = FailureOf(node, ids)) {
        why = "node " + node + " could not fetch its datasets: " + *failure;
        break;
      }
      all_there &= Holds(node, ids);
    }
    if (!why && !all_there && now - hold.since >= kLimit) {
      why = "its datasets were still being fetched after " + FormatDuration(kLimit);
    }
    if (why || all_there) {
      released.push_back(Released{id, why.value_or("")});
      it = held_.erase(it);
    } else {
      ++it;
    }
  }
  // Jobs that have left the queue need nothing fetched for them any more.
  std::erase_if(ahead_, [&](const auto& a) { return !jobs_.pending().count(a.first); });
  std::erase_if(staged_, [&](const auto& s) {
    const Job* job = jobs_.Find(s.first);
    return !job || IsTerminal(job->state);
  });
  return released;
}

std::vector<DatasetPrefetch> DatasetStaging::PrefetchFor(const std::string& node,
                                                         const AccessFor& access) const {
  std::vector<DatasetPrefetch> wanted;
  std::set<std::string> keys;
  auto add = [&](JobId id) {
    const Job* job = jobs_.Find(id);
    if (!job) return;
    std::optional<StoreAccess> store;
    for (const TaskDataset& d : Artifacts::DatasetsOf(*job)) {
      if (wanted.size() >= kMaxPrefetchesPerNode || keys.count(d.manifest_key)) continue;
      auto id_of = store::DatasetCacheId(d.manifest_key);
      if (!id_of.ok() || Holds(node, {*id_of})) continue;
      if (!store) store = access(*job);
      if (!store) return;  // its access is being issued: asked for on a later sync
      keys.insert(d.manifest_key);
      wanted.push_back(DatasetPrefetch{d.ref, d.manifest_key, *store});
    }
  };
  // Jobs held back first: their GPUs are waiting for it.
  for (const auto& [id, hold] : held_) {
    if (std::find(hold.nodes.begin(), hold.nodes.end(), node) != hold.nodes.end()) add(id);
  }
  for (const auto& [id, nodes] : ahead_) {
    if (std::find(nodes.begin(), nodes.end(), node) != nodes.end()) add(id);
  }
  return wanted;
}

}  // namespace cohort::master
