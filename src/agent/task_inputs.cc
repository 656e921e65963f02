#include "agent/task_inputs.h"

#include <sys/stat.h>
#include <unistd.h>

#include <fmt/format.h>

#include <cerrno>
#include <cstring>
#include <filesystem>

#include "agent/dataset_cache.h"
#include "agent/store_retry.h"
#include "common/units.h"
#include "os/directory.h"
#include "store/chunked_files.h"
#include "store/file_tree.h"

namespace cohort::agent {
namespace {

std::string Seconds(Duration d) {
  return fmt::format("{:.1f} s", std::chrono::duration<double>(d).count());
}

// One dataset into the cache, and its link into data/.
Status FetchDataset(const TaskDataset& dataset, DatasetCache& cache, const std::string& task_dir,
                    const ObjectStoreOpener& open_store, const Clock& clock,
                    const std::function<bool()>& stopped,
                    const std::function<void(const std::string&)>& log, HeldInputs& held,
                    Duration limit) {
  const MonoTime started = clock.Monotonic();
  std::optional<DatasetCache::Held> got;
  Status fetched = RetryWhileStoreDown(
      clock, limit, stopped,
      [&](const Status& why) {
        log(fmt::format("cohort: waiting for the store to fetch dataset {}: {}", dataset.ref,
                        why.message()));
      },
      [&]() -> Status {
        COHORT_ASSIGN_OR_RETURN(auto store, OpenTaskStore(task_dir, open_store));
        // A long pull shows in the task's output as it goes, a line every 10 s.
        MonoTime told = clock.Monotonic();
        auto acquired =
            cache.Acquire(*store, dataset.manifest_key, [&](int64_t done, int64_t total) {
              if (clock.Monotonic() - told < std::chrono::seconds(10)) return;
              told = clock.Monotonic();
              log(fmt::format("cohort: fetching dataset {}: {} of {}", dataset.ref,
                              FormatByteSizeApprox(done), FormatByteSizeApprox(total)));
            });
        if (!acquired.ok()) return acquired.status();
        got = *acquired;
        return Status::Ok();
      });
  if (!fetched.ok()) {
    if (fetched.code() == StatusCode::kNotFound) {
      return Status::NotFound(
          fmt::format("dataset {} is not in the store (deleted after the job was submitted?): {}",
                      dataset.ref, fetched.message()));
    }
    return Status(fetched.code(),
                  fmt::format("could not fetch dataset {}: {}", dataset.ref, fetched.message()));
  }
  if (!got) return Status::Ok();  // stopped meanwhile
  held.lock_fds.push_back(got->lock_fd);
  const std::string link = TaskDataDir(task_dir) + "/" + dataset.name;
  if (::symlink(got->path.c_str(), link.c_str()) != 0) {
    return Status::Internal(fmt::format("cannot link {}: {}", link, strerror(errno)));
  }
  log(fmt::format("cohort: dataset {} is at $COHORT_DATA_DIR/{} ({}, {})", dataset.ref,
                  dataset.name, FormatByteSizeApprox(got->bytes),
                  got->fetched ? "fetched in " + Seconds(clock.Monotonic() - started)
                               : "from this node's cache"));
  return Status::Ok();
}

// The job's code into the scratch directory, through a private staging place.
Status FetchCode(const TaskInputsSpec& spec, const std::string& task_dir,
                 const ObjectStoreOpener& open_store, const Clock& clock,
                 std::optional<Owner> owner, const std::function<bool()>& stopped,
                 const std::function<void(const std::string&)>& log) {
  const MonoTime started = clock.Monotonic();
  const std::string staging = task_dir + "/code";
  const std::string work = task_dir + "/work";
  int64_t bytes = 0;
  size_t count = 0;
  Status fetched = RetryWhileStoreDown(
      clock, spec.fetch_limit, stopped,
      [&](const Status& why) {
        log(fmt::format("cohort: waiting for the store to fetch the job's code: {}",
                        why.message()));
      },
      [&]() -> Status {
        std::error_code ignored;
        std::filesystem::remove_all(staging, ignored);
        COHORT_RETURN_IF_ERROR(EnsureDirectory(staging, 0700, std::nullopt));
        COHORT_ASSIGN_OR_RETURN(auto store, OpenTaskStore(task_dir, open_store));
        COHORT_ASSIGN_OR_RETURN(auto files, store::ReadFileManifest(*store, spec.context_key));
        COHORT_RETURN_IF_ERROR(store::PullChunkedFiles(
            *store, files, staging,
            store::PullFilesOptions{.owner = owner, .file_mode = 0644, .dir_mode = 0700}));
        for (const DatasetFile& file : files) {
          COHORT_RETURN_IF_ERROR(
              store::MoveBeneath(staging + "/" + file.path, work, file.path, owner));
        }
        bytes = store::DatasetBytes(files);
        count = files.size();
        return Status::Ok();
      });
  std::error_code ignored;
  std::filesystem::remove_all(staging, ignored);
  if (!fetched.ok()) {
    return Status(fetched.code(),
                  fmt::format("could not fetch the job's code: {}", fetched.message()));
  }
  if (count > 0) {
    log(fmt::format("cohort: the job's code: {} file{} ({}) fetched in {}", count,
                    count == 1 ? "" : "s", FormatByteSizeApprox(bytes),
                    Seconds(clock.Monotonic() - started)));
  }
  return Status::Ok();
}

}  // namespace

Json ToJson(const TaskInputsSpec& spec) {
  Json datasets = Json::array();
  for (const auto& d : spec.datasets) {
    datasets.push_back(Json{{"name", d.name}, {"ref", d.ref}, {"manifest_key", d.manifest_key}});
  }
  return Json{{"cache_dir", spec.cache_dir},
              {"cache_bytes", spec.cache_bytes},
              {"datasets", std::move(datasets)},
              {"context_key", spec.context_key},
              {"fetch_limit_ms", ToMillis(spec.fetch_limit)}};
}

StatusOr<TaskInputsSpec> TaskInputsSpecFromJson(const Json& j) {
  try {
    TaskInputsSpec spec;
    spec.cache_dir = j.at("cache_dir").get<std::string>();
    spec.cache_bytes = j.at("cache_bytes").get<int64_t>();
    for (const auto& d : j.at("datasets")) {
      spec.datasets.push_back(TaskDataset{d.at("name").get<std::string>(),
                                          d.at("ref").get<std::string>(),
                                          d.at("manifest_key").get<std::string>()});
      COHORT_RETURN_IF_ERROR(CheckDatasetName(spec.datasets.back().name, "inputs.datasets.name"));
    }
    spec.context_key = j.at("context_key").get<std::string>();
    spec.fetch_limit = std::chrono::milliseconds(j.at("fetch_limit_ms").get<int64_t>());
    return spec;
  } catch (const std::exception& e) {
    return Status::InvalidArgument(fmt::format("spec.json: inputs: {}", e.what()));
  }
}

std::string TaskDataDir(const std::string& task_dir) { return task_dir + "/data"; }

void HeldInputs::Release() {
  for (int fd : lock_fds) ::close(fd);
  lock_fds.clear();
}

StatusOr<HeldInputs> FetchTaskInputs(const TaskInputsSpec& spec, const std::string& task_dir,
                                     const ObjectStoreOpener& open_store, const Clock& clock,
                                     std::optional<Owner> owner,
                                     const std::function<bool()>& stopped,
                                     const std::function<void(const std::string&)>& log) {
  HeldInputs held;
  auto fail = [&](Status s) {
    held.Release();
    return s;
  };
  if (!spec.datasets.empty()) {
    const std::string data = TaskDataDir(task_dir);
    // Filled as root, then the account's to read and no one else's.
    if (Status s = EnsureDirectory(data, 0700, std::nullopt); !s.ok()) return fail(s);
    DatasetCache cache(spec.cache_dir, spec.cache_bytes);
    for (const TaskDataset& dataset : spec.datasets) {
      Status s = FetchDataset(dataset, cache, task_dir, open_store, clock, stopped, log, held,
                              spec.fetch_limit);
      if (!s.ok()) return fail(s);
      if (stopped && stopped()) return held;
    }
    if (owner && ::chown(data.c_str(), owner->uid, owner->gid) != 0) {
      return fail(Status::Internal(
          fmt::format("cannot give {} to uid {}: {}", data, owner->uid, strerror(errno))));
    }
    // Read-only for the account (links it cannot change); a supervisor that is not root keeps
    // its own right to remove them.
    if (::chmod(data.c_str(), owner ? 0500 : 0700) != 0) {
      return fail(
          Status::Internal(fmt::format("cannot set the mode of {}: {}", data, strerror(errno))));
    }
    // The cache stays within its bound; what this task holds is never evicted.
    auto evicted = cache.Trim();
    if (!evicted.ok()) {
      log(fmt::format("cohort: the node's dataset cache could not be trimmed: {}",
                      evicted.status().message()));
    } else if (*evicted > 0) {
      log(
          fmt::format("cohort: {} of datasets no task here reads were evicted from the node's "
                      "cache to keep it within {}",
                      FormatByteSizeApprox(*evicted), FormatByteSizeApprox(spec.cache_bytes)));
    }
  }
  if (!spec.context_key.empty()) {
    Status s = FetchCode(spec, task_dir, open_store, clock, owner, stopped, log);
    if (!s.ok()) return fail(s);
  }
  return held;
}

}  // namespace cohort::agent
