#include "model/json.h"

#include "model/image_reference.h"

#include <fmt/format.h>
#include <algorithm>
#include <cctype>
#include <cmath>

#include <limits>
#include <stdexcept>
#include <type_traits>
#include <utility>

#include "common/units.h"
#include "model/job_spec_parser.h"
#include "model/json_errors.h"
#include "model/limits.h"

namespace cohort {
namespace {

// A week: far above any spec's grace period (at most an hour), far below an overflow.
constexpr int64_t kMaxGraceMs = 7LL * 24 * 3600 * 1000;

Json TimeOrNull(const std::optional<Timestamp>& t) {
  return t ? Json(FormatTimestamp(*t)) : Json(nullptr);
}

// Every integer of a document goes through here: nlohmann's get<int>() converts a float
// ("1e300") with a plain cast, undefined behaviour out of range, and wraps an integer that does
// not fit. Either is an error naming the field.
template <typename T>
T Integer(const Json& v, const char* key) {
  static_assert(std::is_integral_v<T> && !std::is_same_v<T, bool>);
  if (!v.is_number_integer()) {
    throw std::runtime_error(
        fmt::format("{}: must be an integer, not {}", key, DescribeJsonValue(v)));
  }
  bool fits = v.is_number_unsigned() ? std::in_range<T>(v.get<uint64_t>())
                                     : std::in_range<T>(v.get<int64_t>());
  if (!fits) throw std::runtime_error(fmt::format("{}: {} is out of range", key, v.dump()));
  return v.is_number_unsigned() ? static_cast<T>(v.get<uint64_t>())
                                : static_cast<T>(v.get<int64_t>());
}

// "a string", "a list": what a field must be, in the words of the project's errors.
template <typename T>
constexpr const char* Expected() {
  if constexpr (std::is_same_v<T, std::string>) return "a string";
  if constexpr (std::is_same_v<T, bool>) return "true or false";
  if constexpr (std::is_floating_point_v<T>) return "a number";
  if constexpr (std::is_same_v<T, std::vector<std::string>>) return "a list of strings";
  if constexpr (std::is_same_v<T, std::map<std::string, std::string>>) {
    return "an object of strings";
  }
  return "a value of another type";
}

template <typename T>
T Get(const Json& v, const char* key) {
  if constexpr (std::is_integral_v<T> && !std::is_same_v<T, bool>) {
    return Integer<T>(v, key);
  } else {
    // nlohmann's own type errors name neither the field nor the value: say both.
    try {
      return v.get<T>();
    } catch (const Json::type_error&) {
      throw std::runtime_error(
          fmt::format("{}: must be {}, not {}", key, Expected<T>(), DescribeJsonValue(v)));
    }
  }
}

// The field `key` of the object `j`; an error naming it when `j` is no object or lacks it.
const Json& Required(const Json& j, const char* key) {
  if (!j.is_object()) {
    throw std::runtime_error(
        fmt::format("{}: expected in an object, not in {}", key, DescribeJsonValue(j)));
  }
  auto it = j.find(key);
  if (it == j.end()) throw std::runtime_error(fmt::format("{}: missing", key));
  return *it;
}

// The list `key` of `j`.
const Json& ListAt(const Json& j, const char* key) {
  const Json& list = Required(j, key);
  if (!list.is_array()) {
    throw std::runtime_error(
        fmt::format("{}: must be a list, not {}", key, DescribeJsonValue(list)));
  }
  return list;
}

template <typename T>
T At(const Json& j, const char* key) {
  return Get<T>(Required(j, key), key);
}

std::optional<Timestamp> OptionalTime(const Json& j, const char* key) {
  auto it = j.find(key);
  if (it == j.end() || it->is_null()) return std::nullopt;
  auto t = ParseTimestamp(Get<std::string>(*it, key));
  if (!t.ok()) throw std::runtime_error(fmt::format("{}: {}", key, t.status().message()));
  return *t;
}

Timestamp RequiredTime(const Json& j, const char* key) {
  auto t = OptionalTime(j, key);
  if (!t) throw std::runtime_error(fmt::format("{}: missing", key));
  return *t;
}

template <typename T>
std::optional<T> OptionalValue(const Json& j, const char* key) {
  auto it = j.find(key);
  if (it == j.end() || it->is_null()) return std::nullopt;
  return Get<T>(*it, key);
}

template <typename T>
T ValueOr(const Json& j, const char* key, T fallback) {
  auto it = j.find(key);
  if (it == j.end() || it->is_null()) return fallback;
  return Get<T>(*it, key);
}

std::vector<int> IntList(const Json& j, const char* key) {
  const Json& list = ListAt(j, key);
  std::vector<int> out;
  for (const auto& v : list) out.push_back(Integer<int>(v, key));
  return out;
}

// CPUs (a JSON number) in thousandths, refusing a value that would overflow.
int64_t MilliCpusAt(const Json& j, const char* key) {
  const Json& v = Required(j, key);
  if (!v.is_number()) {
    throw std::runtime_error(fmt::format("{}: must be a number of CPUs, got {}", key, v.dump()));
  }
  auto milli = MilliCpusFromNumber(v.get<double>());
  if (!milli) throw std::runtime_error(fmt::format("{}: {} is out of range", key, v.dump()));
  return *milli;
}

Json ResourcesJson(const Resources& r) {
  return Json{{"gpus", r.gpus},
              {"cpus", static_cast<double>(r.milli_cpus) / 1000.0},
              {"memory", FormatByteSize(r.memory_bytes)}};
}

Resources ResourcesFrom(const Json& j) {
  Resources r;
  r.gpus = At<int64_t>(j, "gpus");
  r.milli_cpus = MilliCpusAt(j, "cpus");
  auto mem = ParseByteSize(At<std::string>(j, "memory"));
  if (!mem.ok()) throw std::runtime_error("memory: " + mem.status().message());
  r.memory_bytes = *mem;
  return r;
}

// Runs a decoder that uses nlohmann's throwing accessors and turns any throw into a Status.
template <typename T, typename F>
StatusOr<T> Decode(const char* what, F&& f) {
  try {
    return f();
  } catch (const std::exception& e) {
    return Status::InvalidArgument(fmt::format("malformed {}: {}", what, JsonErrorText(e)));
  }
}

Task TaskFrom(const Json& j) {
  Task t;
  t.role = At<std::string>(j, "role");
  t.index = At<int>(j, "index");
  t.rank = At<int>(j, "rank");
  t.resources = ResourcesFrom(Required(j, "resources"));
  t.node_id = At<std::string>(j, "node");
  t.host = ValueOr<std::string>(j, "host", "");
  t.gpus = IntList(j, "gpus");
  t.port = ValueOr<int>(j, "port", 0);
  auto state = ParseTaskState(At<std::string>(j, "state"));
  if (!state) throw std::runtime_error("unknown task state");
  t.state = *state;
  t.stop_requested = ValueOr<bool>(j, "stop_requested", false);
  t.scaled_down = ValueOr<bool>(j, "scaled_down", false);
  t.exit_code = OptionalValue<int>(j, "exit_code");
  t.signal = OptionalValue<int>(j, "signal");
  t.pid = ValueOr<int64_t>(j, "pid", 0);
  t.started_at = OptionalTime(j, "started_at");
  t.finished_at = OptionalTime(j, "finished_at");
  t.held_since = OptionalTime(j, "held_since");
  t.assigned_version = ValueOr<uint64_t>(j, "assigned_version", 0);
  return t;
}

RestoredCheckpoint RestoredCheckpointFrom(const Json& j) {
  RestoredCheckpoint r;
  r.attempt = At<int>(j, "attempt");
  r.step = OptionalValue<int64_t>(j, "step");
  r.taken_at = RequiredTime(j, "taken_at");
  r.files = ValueOr<int64_t>(j, "files", 0);
  r.bytes = ValueOr<int64_t>(j, "bytes", 0);
  if (r.attempt < 1 || r.files < 0 || r.bytes < 0) {
    throw std::runtime_error("restored_from: attempt, files or bytes out of range");
  }
  return r;
}

}  // namespace

Json ToJson(const RestoredCheckpoint& r) {
  return Json{{"attempt", r.attempt},
              {"step", r.step ? Json(*r.step) : Json(nullptr)},
              {"taken_at", FormatTimestamp(r.taken_at)},
              {"files", r.files},
              {"bytes", r.bytes}};
}

StatusOr<RestoredCheckpoint> RestoredCheckpointFromJson(const Json& j) {
  return Decode<RestoredCheckpoint>("restored checkpoint",
                                    [&] { return RestoredCheckpointFrom(j); });
}

StatusOr<Json> ParseJson(std::string_view text) {
  try {
    return Json::parse(text);
  } catch (const Json::exception& e) {  // parse_error, and out_of_range for a number like 1e400
    return Status::InvalidArgument(fmt::format("not valid JSON: {}", JsonErrorText(e)));
  }
}

Json ToJson(const Task& t) {
  return Json{{"role", t.role},
              {"index", t.index},
              {"rank", t.rank},
              {"resources", ResourcesJson(t.resources)},
              {"node", t.node_id},
              {"host", t.host},
              {"gpus", t.gpus},
              {"port", t.port},
              {"state", TaskStateName(t.state)},
              {"stop_requested", t.stop_requested},
              {"scaled_down", t.scaled_down},
              {"exit_code", t.exit_code ? Json(*t.exit_code) : Json(nullptr)},
              {"signal", t.signal ? Json(*t.signal) : Json(nullptr)},
              {"pid", t.pid},
              {"started_at", TimeOrNull(t.started_at)},
              {"finished_at", TimeOrNull(t.finished_at)},
              {"held_since", TimeOrNull(t.held_since)},
              {"assigned_version", t.assigned_version}};
}

Json ToJson(const Job& job) {
  Json tasks = Json::array();
  for (const auto& t : job.tasks) tasks.push_back(ToJson(t));
  Json history = Json::array();
  for (const auto& a : job.history) {
    Json attempt{{"attempt", a.number},
                 {"started_at", TimeOrNull(a.started_at)},
                 {"finished_at", TimeOrNull(a.finished_at)},
                 {"result", a.result}};
    if (!a.nodes.empty()) attempt["nodes"] = a.nodes;
    if (a.restored_from) attempt["restored_from"] = ToJson(*a.restored_from);
    history.push_back(std::move(attempt));
  }
  Json excluded = Json::object();
  // null: for as long as the job lives (kExcludedForGood).
  for (const auto& [node, until] : job.excluded_nodes) {
    excluded[node] = until == kExcludedForGood ? Json(nullptr) : Json(FormatTimestamp(until));
  }
  return Json{
      {"id", job.id},
      {"name", job.spec.name},
      {"team", job.spec.team},
      {"priority", job.spec.priority},
      {"user", job.user},
      {"state", JobStateName(job.state)},
      {"attempt", job.attempt},
      {"message", job.message},
      {"submitted_at", FormatTimestamp(job.submitted_at)},
      {"placed_at", TimeOrNull(job.placed_at)},
      {"running_at", TimeOrNull(job.running_at)},
      {"finished_at", TimeOrNull(job.finished_at)},
      {"stop_target", job.stop_target ? Json(JobStateName(*job.stop_target)) : Json(nullptr)},
      {"preempted_for", job.preempted_for ? Json(*job.preempted_for) : Json(nullptr)},
      {"failures", job.failures},
      {"preemptions", job.preemptions},
      {"not_before", TimeOrNull(job.not_before)},
      {"excluded_nodes", excluded},
      {"idle_reclaims", job.idle_reclaims},
      {"last_checkpoint_at", TimeOrNull(job.last_checkpoint_at)},
      {"hold", job.hold},
      {"artifacts", job.artifacts ? ToJson(*job.artifacts) : Json(nullptr)},
      {"restored_from", job.restored_from ? ToJson(*job.restored_from) : Json(nullptr)},
      {"trial", job.trial ? Json{{"sweep", job.trial->sweep},
                                 {"trial", job.trial->trial},
                                 {"hparams", job.trial->hparams}}
                          : Json(nullptr)},
      {"array", job.array ? Json{{"id", job.array->id},
                                 {"index", job.array->index},
                                 {"count", job.array->count},
                                 {"max_parallel", job.array->max_parallel}}
                          : Json(nullptr)},
      {"request_id", job.request_id},
      {"request_digest", job.request_digest},
      {"version", job.version},
      {"spec", ToJson(job.spec)},
      {"tasks", tasks},
      {"history", history},
      {"dropped_attempts_gpu_seconds", static_cast<double>(job.dropped_service.count()) / 1e6}};
}

StatusOr<Job> JobFromJson(const Json& j) {
  return Decode<Job>("job", [&]() -> Job {
    Job job;
    job.id = At<JobId>(j, "id");
    auto spec = ParseJobSpecJson(Required(j, "spec"));
    if (!spec.ok()) throw std::runtime_error("spec: " + spec.status().ToString());
    job.spec = std::move(spec).value();
    job.user = ValueOr<std::string>(j, "user", "");
    auto state = ParseJobState(At<std::string>(j, "state"));
    if (!state) throw std::runtime_error("unknown job state");
    job.state = *state;
    job.attempt = ValueOr<int>(j, "attempt", 0);
    job.message = ValueOr<std::string>(j, "message", "");
    job.submitted_at = RequiredTime(j, "submitted_at");
    job.placed_at = OptionalTime(j, "placed_at");
    job.running_at = OptionalTime(j, "running_at");
    job.finished_at = OptionalTime(j, "finished_at");
    if (auto target = OptionalValue<std::string>(j, "stop_target")) {
      job.stop_target = ParseJobState(*target);
    }
    job.preempted_for = OptionalValue<JobId>(j, "preempted_for");
    job.failures = ValueOr<int>(j, "failures", 0);
    job.preemptions = ValueOr<int>(j, "preemptions", 0);
    job.not_before = OptionalTime(j, "not_before");
    if (auto it = j.find("excluded_nodes"); it != j.end() && it->is_object()) {
      for (const auto& [node, until] : it->items()) {
        if (until.is_null()) {
          job.excluded_nodes[node] = kExcludedForGood;
          continue;
        }
        auto t = ParseTimestamp(until.get<std::string>());
        if (!t.ok()) throw std::runtime_error("excluded_nodes." + node + ": not a timestamp");
        job.excluded_nodes[node] = *t;
      }
    }
    job.idle_reclaims = ValueOr<int>(j, "idle_reclaims", 0);
    job.last_checkpoint_at = OptionalTime(j, "last_checkpoint_at");
    job.hold = ValueOr<std::string>(j, "hold", "");
    if (auto it = j.find("trial"); it != j.end() && !it->is_null()) {
      TrialRef trial;
      trial.sweep = At<SweepId>(*it, "sweep");
      trial.trial = At<int>(*it, "trial");
      trial.hparams = Required(*it, "hparams");
      if (!trial.hparams.is_object()) throw std::runtime_error("trial.hparams: not an object");
      job.trial = std::move(trial);
    }
    if (auto it = j.find("array"); it != j.end() && !it->is_null()) {
      ArrayElement array;
      array.id = At<JobId>(*it, "id");
      array.index = At<int>(*it, "index");
      array.count = At<int>(*it, "count");
      array.max_parallel = ValueOr<int>(*it, "max_parallel", 0);
      job.array = array;
    }
    if (auto it = j.find("artifacts"); it != j.end() && !it->is_null()) {
      auto artifacts = UploadProgressFromJson(*it);
      if (!artifacts.ok()) throw std::runtime_error("artifacts: " + artifacts.status().message());
      job.artifacts = std::move(*artifacts);
    }
    if (auto it = j.find("restored_from"); it != j.end() && !it->is_null()) {
      job.restored_from = RestoredCheckpointFrom(*it);
    }
    job.request_id = ValueOr<std::string>(j, "request_id", "");
    job.request_digest = ValueOr<std::string>(j, "request_digest", "");
    job.version = ValueOr<uint64_t>(j, "version", 0);
    for (const auto& t : ListAt(j, "tasks")) job.tasks.push_back(TaskFrom(t));
    if (auto it = j.find("history"); it != j.end()) {
      for (const auto& a : *it) {
        AttemptSummary s;
        s.number = At<int>(a, "attempt");
        s.started_at = OptionalTime(a, "started_at");
        s.finished_at = OptionalTime(a, "finished_at");
        s.result = ValueOr<std::string>(a, "result", "");
        if (auto nodes = a.find("nodes"); nodes != a.end()) {
          s.nodes = nodes->get<std::map<std::string, std::string>>();
        }
        if (auto restored = a.find("restored_from"); restored != a.end() && !restored->is_null()) {
          s.restored_from = RestoredCheckpointFrom(*restored);
        }
        job.history.push_back(std::move(s));
      }
    }
    double dropped = ValueOr<double>(j, "dropped_attempts_gpu_seconds", 0.0);
    // Bounded before it becomes microseconds, where it would overflow.
    if (!(dropped >= 0 && dropped < 1e12)) {
      throw std::runtime_error("dropped_attempts_gpu_seconds: must be from 0 to 1e12");
    }
    job.dropped_service = Duration(std::llround(dropped * 1e6));
    return job;
  });
}

Json ToJson(const JobEvent& e) {
  return Json{{"job_id", e.job_id},
              {"time", FormatTimestamp(e.time)},
              {"type", e.type},
              {"message", e.message}};
}

StatusOr<JobEvent> JobEventFromJson(const Json& j) {
  return Decode<JobEvent>("event", [&] {
    JobEvent e;
    e.job_id = At<JobId>(j, "job_id");
    e.time = RequiredTime(j, "time");
    e.type = At<std::string>(j, "type");
    e.message = ValueOr<std::string>(j, "message", "");
    return e;
  });
}

Json ToJson(const NodeInfo& n) {
  Json gpus = Json::array();
  for (const auto& g : n.gpus) {
    gpus.push_back(Json{{"index", g.index},
                        {"uuid", g.uuid},
                        {"model", g.model},
                        {"memory", FormatByteSize(g.memory_bytes)},
                        {"memory_bytes", g.memory_bytes},
                        {"pci_bus_id", g.pci_bus_id},
                        {"numa_node", g.numa_node}});
  }
  Json links = Json::array();
  for (const auto& l : n.gpu_links) {
    links.push_back(
        Json{{"a", l.a}, {"b", l.b}, {"type", GpuLinkTypeName(l.type)}, {"nvlinks", l.nvlinks}});
  }
  return Json{{"id", n.id},
              {"address", n.address},
              {"cpus", static_cast<double>(n.milli_cpus) / 1000.0},
              {"memory", FormatByteSize(n.memory_bytes)},
              {"memory_bytes", n.memory_bytes},
              {"gpus", gpus},
              {"gpu_links", links},
              {"gpu_source", n.gpu_source},
              {"ports", Json{{"first", n.ports.first}, {"last", n.ports.last}}},
              {"labels", n.labels},
              {"agent_version", n.agent_version},
              {"instance", n.instance}};
}

StatusOr<NodeInfo> NodeInfoFromJson(const Json& j) {
  // Only what cannot be held is refused here; whether the values make sense is
  // ValidateNodeInfo's to say (model/node_validation.h), when an agent registers.
  return Decode<NodeInfo>("node", [&] {
    NodeInfo n;
    n.id = At<std::string>(j, "id");
    n.address = At<std::string>(j, "address");
    n.milli_cpus = MilliCpusAt(j, "cpus");
    n.memory_bytes = At<int64_t>(j, "memory_bytes");
    for (const auto& g : ListAt(j, "gpus")) {
      Gpu gpu;
      gpu.index = At<int>(g, "index");
      gpu.uuid = ValueOr<std::string>(g, "uuid", "");
      gpu.model = ValueOr<std::string>(g, "model", "");
      gpu.memory_bytes = ValueOr<int64_t>(g, "memory_bytes", 0);
      gpu.pci_bus_id = ValueOr<std::string>(g, "pci_bus_id", "");
      gpu.numa_node = ValueOr<int>(g, "numa_node", -1);
      n.gpus.push_back(std::move(gpu));
    }
    if (auto it = j.find("gpu_links"); it != j.end()) {
      for (const auto& l : *it) {
        GpuLink link;
        link.a = At<int>(l, "a");
        link.b = At<int>(l, "b");
        auto type = ParseGpuLinkType(At<std::string>(l, "type"));
        if (!type) throw std::runtime_error("gpu_links: unknown link type");
        link.type = *type;
        link.nvlinks = ValueOr<int>(l, "nvlinks", 0);
        n.gpu_links.push_back(link);
      }
    }
    n.gpu_source = ValueOr<std::string>(j, "gpu_source", "");
    if (auto it = j.find("ports"); it != j.end()) {
      n.ports.first = At<int>(*it, "first");
      n.ports.last = At<int>(*it, "last");
    }
    n.labels = ValueOr<std::map<std::string, std::string>>(j, "labels", {});
    n.agent_version = ValueOr<std::string>(j, "agent_version", "");
    n.instance = ValueOr<std::string>(j, "instance", "");
    return n;
  });
}

Json ToJson(const TaskId& id) {
  return Json{{"job_id", id.job}, {"attempt", id.attempt}, {"role", id.role}, {"index", id.index}};
}

StatusOr<TaskId> TaskIdFromJson(const Json& j) {
  return Decode<TaskId>("task id", [&] {
    TaskId id;
    id.job = At<JobId>(j, "job_id");
    id.attempt = At<int>(j, "attempt");
    id.role = At<std::string>(j, "role");
    id.index = At<int>(j, "index");
    // The same rules as the text form: the id names a directory on the agent.
    auto checked = ParseTaskId(id.ToString());
    if (!checked.ok() || *checked != id) throw std::runtime_error(checked.status().message());
    return id;
  });
}

namespace {
TaskId TaskIdOrThrow(const Json& j) {
  auto id = TaskIdFromJson(j);
  if (!id.ok()) throw std::runtime_error("task: " + id.status().message());
  return *id;
}

Json RunAsJson(const RunAs& r) {
  Json j{{"user", r.user}};
  if (r.uid) j["uid"] = *r.uid;
  if (r.gid) j["gid"] = *r.gid;
  return j;
}

// The name is only a string here: its syntax is checked by the agent for its one task, so that a
// user name no node can have fails that user's task, not every task of the desired state.
RunAs RunAsFrom(const Json& j) {
  if (!j.is_object()) throw std::runtime_error("run_as: must be an object");
  RunAs r;
  auto user = j.find("user");
  if (user == j.end() || !user->is_string()) {
    throw std::runtime_error("run_as.user: must be a string (a Unix account name)");
  }
  r.user = user->get<std::string>();
  for (auto [key, id] : {std::pair{"uid", &r.uid}, std::pair{"gid", &r.gid}}) {
    auto it = j.find(key);
    if (it == j.end() || it->is_null()) continue;
    std::string field = fmt::format("run_as.{}", key);
    // As a signed 64-bit integer, so that -1 is out of range rather than 2^32 - 1.
    int64_t value = it->is_number_unsigned() && it->get<uint64_t>() > kMaxUnixId
                        ? int64_t{kMaxUnixId} + 1
                        : Integer<int64_t>(*it, field.c_str());
    if (value < 0 || value > kMaxUnixId) {
      throw std::runtime_error(
          fmt::format("{}: {} is out of range (0 to {})", field, it->dump(), kMaxUnixId));
    }
    *id = static_cast<uint32_t>(value);
  }
  if (r.uid.has_value() != r.gid.has_value()) {
    throw std::runtime_error("run_as: a uid and a gid go together, or neither is given");
  }
  return r;
}

// --- Resource samples (model/resource_samples.h) ---

Json OptionalJson(const std::optional<int64_t>& v) { return v ? Json(*v) : Json(nullptr); }

// An integer field from `low` to `high`, or absent (missing or null).
std::optional<int64_t> OptionalInRange(const Json& j, const char* key, int64_t low, int64_t high) {
  auto v = OptionalValue<int64_t>(j, key);
  if (v && (*v < low || *v > high)) {
    throw std::runtime_error(fmt::format("{}: {} is out of range ({} to {})", key, *v, low, high));
  }
  return v;
}

// A list of at most kMaxSamplesPerReport samples; absent: none.
template <typename Sample, typename Decode>
std::vector<Sample> SamplesFrom(const Json& j, const char* key, Decode decode) {
  std::vector<Sample> out;
  auto it = j.find(key);
  if (it == j.end() || it->is_null()) return out;
  if (!it->is_array()) throw std::runtime_error(fmt::format("{}: must be a list", key));
  if (it->size() > kMaxSamplesPerReport) {
    throw std::runtime_error(
        fmt::format("{}: {} samples, at most {}", key, it->size(), kMaxSamplesPerReport));
  }
  for (const auto& sample : *it) out.push_back(decode(sample));
  return out;
}

Json ToJson(const TaskSample& s) {
  return Json{{"at", FormatTimestamp(s.at)},
              {"milli_cpus", OptionalJson(s.milli_cpus)},
              {"rss_bytes", s.rss_bytes},
              {"read_bytes_per_s", OptionalJson(s.read_bytes_per_s)},
              {"read_calls_per_s", OptionalJson(s.read_calls_per_s)}};
}

TaskSample TaskSampleFrom(const Json& j) {
  TaskSample s;
  s.at = RequiredTime(j, "at");
  s.milli_cpus = OptionalInRange(j, "milli_cpus", 0, kMaxNodeCpus * 1000);
  s.rss_bytes = OptionalInRange(j, "rss_bytes", 0, kMaxNodeMemoryBytes).value_or(0);
  s.read_bytes_per_s = OptionalInRange(j, "read_bytes_per_s", 0, kMaxReadBytesPerSecond);
  s.read_calls_per_s = OptionalInRange(j, "read_calls_per_s", 0, kMaxReadCallsPerSecond);
  return s;
}

Json ToJson(const GpuSample& s) {
  return Json{{"at", FormatTimestamp(s.at)},
              {"utilization", s.utilization_percent ? Json(*s.utilization_percent) : Json(nullptr)},
              {"memory_used_bytes", OptionalJson(s.memory_used_bytes)}};
}

GpuSample GpuSampleFrom(const Json& j) {
  GpuSample s;
  s.at = RequiredTime(j, "at");
  if (auto u = OptionalInRange(j, "utilization", 0, 100))
    s.utilization_percent = static_cast<int>(*u);
  s.memory_used_bytes = OptionalInRange(j, "memory_used_bytes", 0, kMaxGpuMemoryBytes);
  return s;
}

Json ToJson(const GpuSamples& g) {
  Json samples = Json::array();
  for (const auto& s : g.samples) samples.push_back(ToJson(s));
  return Json{{"index", g.index}, {"samples", samples}};
}

GpuSamples GpuSamplesFrom(const Json& j) {
  GpuSamples g;
  int64_t index = At<int64_t>(j, "index");
  if (index < 0 || index >= kMaxNodeGpus) {
    throw std::runtime_error(
        fmt::format("index: {} is out of range (0 to {})", index, kMaxNodeGpus - 1));
  }
  g.index = static_cast<int>(index);
  g.samples = SamplesFrom<GpuSample>(j, "samples", GpuSampleFrom);
  return g;
}

}  // namespace

Json ToJson(const StoreAccess& a) {
  Json j = Json::object();
  auto put = [&](const char* key, const std::string& value) {
    if (!value.empty()) j[key] = value;
  };
  put("directory", a.directory);
  put("endpoint", a.endpoint);
  put("region", a.region);
  put("bucket", a.bucket);
  put("prefix", a.prefix);
  put("access_key", a.access_key);
  put("secret_key", a.secret_key);
  put("session_token", a.session_token);
  if (a.expires) j["expires"] = FormatTimestamp(*a.expires);
  return j;
}

StatusOr<StoreAccess> StoreAccessFromJson(const Json& j) {
  return Decode<StoreAccess>("store access", [&] {
    if (!j.is_object()) throw std::runtime_error("must be an object");
    StoreAccess a;
    a.directory = ValueOr<std::string>(j, "directory", "");
    a.endpoint = ValueOr<std::string>(j, "endpoint", "");
    a.region = ValueOr<std::string>(j, "region", "");
    a.bucket = ValueOr<std::string>(j, "bucket", "");
    a.prefix = ValueOr<std::string>(j, "prefix", "");
    a.access_key = ValueOr<std::string>(j, "access_key", "");
    a.secret_key = ValueOr<std::string>(j, "secret_key", "");
    a.session_token = ValueOr<std::string>(j, "session_token", "");
    a.expires = OptionalTime(j, "expires");
    return a;
  });
}

Json ToJson(const UploadProgress& p) {
  Json j{{"id", p.id},
         {"state", UploadStateName(p.state)},
         {"files_done", p.files_done},
         {"files_total", p.files_total},
         {"bytes_done", p.bytes_done},
         {"bytes_total", p.bytes_total},
         {"files_skipped", p.files_skipped}};
  if (!p.reason.empty()) j["reason"] = BoundedUploadReason(p.reason);
  if (p.retry_at) j["retry_at"] = FormatTimestamp(*p.retry_at);
  return j;
}

StatusOr<UploadProgress> UploadProgressFromJson(const Json& j) {
  return Decode<UploadProgress>("upload progress", [&] {
    UploadProgress p;
    p.id = At<std::string>(j, "id");
    if (p.id.size() > kMaxUploadIdBytes) {
      throw std::runtime_error(
          fmt::format("id: {} bytes, at most {}", p.id.size(), kMaxUploadIdBytes));
    }
    std::string state = At<std::string>(j, "state");
    auto parsed = Parse(kUploadStateNames, state);
    if (!parsed) {
      throw std::runtime_error(
          fmt::format("state: \"{}\" is not {}", state.substr(0, 40), NameList(kUploadStateNames)));
    }
    p.state = *parsed;
    auto count = [&](const char* key) {
      int64_t v = ValueOr<int64_t>(j, key, 0);
      if (v < 0) throw std::runtime_error(fmt::format("{}: must be 0 or more", key));
      return v;
    };
    p.files_done = count("files_done");
    p.files_total = count("files_total");
    p.bytes_done = count("bytes_done");
    p.bytes_total = count("bytes_total");
    p.files_skipped = count("files_skipped");
    p.reason = BoundedUploadReason(ValueOr<std::string>(j, "reason", ""));
    p.retry_at = OptionalTime(j, "retry_at");
    return p;
  });
}

namespace {

Json TaskDatasetsJson(const std::vector<TaskDataset>& datasets) {
  Json list = Json::array();
  for (const auto& d : datasets) {
    list.push_back(Json{{"name", d.name}, {"ref", d.ref}, {"manifest_key", d.manifest_key}});
  }
  return list;
}

std::vector<TaskDataset> TaskDatasetsFrom(const Json& j) {
  if (!j.is_array() || j.size() > kMaxJobDatasets) {
    throw std::runtime_error(
        fmt::format("datasets: must be a list of at most {} datasets", kMaxJobDatasets));
  }
  std::vector<TaskDataset> out;
  for (const auto& d : j) {
    TaskDataset dataset{At<std::string>(d, "name"), At<std::string>(d, "ref"),
                        At<std::string>(d, "manifest_key")};
    if (Status s = CheckDatasetName(dataset.name, "datasets[].name"); !s.ok()) {
      throw std::runtime_error(s.message());
    }
    out.push_back(std::move(dataset));
  }
  return out;
}

}  // namespace

namespace {

Json TaskFilesJson(const std::vector<TaskFile>& files) {
  Json out = Json::array();
  for (const auto& f : files) {
    out.push_back({{"name", f.name}, {"content", f.content}, {"env", f.env}});
  }
  return out;
}

// A name the agent joins to a directory: nothing that leaves it, nothing hidden.
bool IsTaskFileName(const std::string& name) {
  if (name.empty() || name.size() > 64 || name[0] == '.') return false;
  return std::all_of(name.begin(), name.end(), [](char c) {
    return std::isalnum(static_cast<unsigned char>(c)) || c == '.' || c == '_' || c == '-';
  });
}

std::vector<TaskFile> TaskFilesFrom(const Json& j) {
  if (!j.is_array()) throw std::runtime_error("files: must be a list");
  if (j.size() > kMaxTaskFiles) {
    throw std::runtime_error(fmt::format("files: at most {} are allowed", kMaxTaskFiles));
  }
  std::vector<TaskFile> files;
  for (const auto& f : j) {
    TaskFile file;
    file.name = At<std::string>(f, "name");
    if (!IsTaskFileName(file.name)) {
      throw std::runtime_error(fmt::format("files: \"{}\" is not a plain file name", file.name));
    }
    file.content = At<std::string>(f, "content");
    file.env = At<std::vector<std::string>>(f, "env");
    files.push_back(std::move(file));
  }
  return files;
}

}  // namespace

Json ToJson(const TaskLaunch& l) {
  return Json{{"task", ToJson(l.id)},
              {"command", l.command},
              {"env", l.env},
              {"workdir", l.workdir},
              {"gpus", l.gpus},
              {"grace_period_ms", ToMillis(l.grace_period)},
              {"run_as", RunAsJson(l.run_as)},
              {"checkpoint_dir", l.checkpoint_dir},
              {"output_dir", l.output_dir},
              {"log_dir", l.log_dir},
              {"memory_limit_bytes", l.memory_limit_bytes},
              {"fence", l.fence},
              {"hparams", l.hparams},
              {"outputs_key", l.outputs_key},
              {"checkpoints_key", l.checkpoints_key},
              {"store", l.store.empty() ? Json(nullptr) : ToJson(l.store)},
              {"datasets", TaskDatasetsJson(l.datasets)},
              {"context_key", l.context_key},
              {"files", TaskFilesJson(l.files)},
              {"tools", l.tools},
              {"slurm_tools", l.slurm_tools},
              {"exec_service", l.exec_service},
              {"terminal", l.terminal},
              {"image", l.image},
              {"image_insecure", l.image_insecure}};
}

StatusOr<TaskLaunch> TaskLaunchFromJson(const Json& j) {
  return Decode<TaskLaunch>("task launch", [&] {
    TaskLaunch l;
    l.id = TaskIdOrThrow(Required(j, "task"));
    l.command = At<std::vector<std::string>>(j, "command");
    l.env = At<std::map<std::string, std::string>>(j, "env");
    l.workdir = ValueOr<std::string>(j, "workdir", "");
    l.gpus = IntList(j, "gpus");
    // Bounded before it becomes microseconds, where it would overflow.
    int64_t grace_ms = ValueOr<int64_t>(j, "grace_period_ms", 30000);
    if (grace_ms < 0 || grace_ms > kMaxGraceMs) {
      throw std::runtime_error(fmt::format("grace_period_ms: must be from 0 to {}", kMaxGraceMs));
    }
    l.grace_period = std::chrono::milliseconds(grace_ms);
    // Absent from a master older than the agent: the agent then refuses to guess.
    if (auto it = j.find("run_as"); it != j.end() && !it->is_null()) l.run_as = RunAsFrom(*it);
    l.checkpoint_dir = ValueOr<std::string>(j, "checkpoint_dir", "");
    l.output_dir = ValueOr<std::string>(j, "output_dir", "");
    l.log_dir = ValueOr<std::string>(j, "log_dir", "");
    l.memory_limit_bytes = ValueOr<int64_t>(j, "memory_limit_bytes", 0);
    if (l.memory_limit_bytes < 0) throw std::runtime_error("memory_limit_bytes: must be 0 or more");
    l.fence = ValueOr<bool>(j, "fence", false);
    l.hparams = ValueOr<std::string>(j, "hparams", "");
    l.outputs_key = ValueOr<std::string>(j, "outputs_key", "");
    l.checkpoints_key = ValueOr<std::string>(j, "checkpoints_key", "");
    if (auto it = j.find("store"); it != j.end() && !it->is_null()) {
      auto store = StoreAccessFromJson(*it);
      if (!store.ok()) throw std::runtime_error("store: " + store.status().message());
      l.store = std::move(*store);
    }
    if (auto it = j.find("datasets"); it != j.end() && !it->is_null()) {
      l.datasets = TaskDatasetsFrom(*it);
    }
    l.context_key = ValueOr<std::string>(j, "context_key", "");
    if (auto it = j.find("files"); it != j.end() && !it->is_null()) l.files = TaskFilesFrom(*it);
    l.tools = ValueOr<bool>(j, "tools", false);
    l.slurm_tools = ValueOr<bool>(j, "slurm_tools", false);
    l.exec_service = ValueOr<bool>(j, "exec_service", false);
    l.terminal = ValueOr<bool>(j, "terminal", false);
    l.image = ValueOr<std::string>(j, "image", "");
    l.image_insecure = ValueOr<bool>(j, "image_insecure", false);
    return l;
  });
}

Json ToJson(const ImagePull& pull) {
  return Json{{"image", pull.image},
              {"done_bytes", pull.done_bytes},
              {"total_bytes", pull.total_bytes},
              {"finished", pull.finished},
              {"took_ms", ToMillis(pull.took)}};
}

StatusOr<ImagePull> ImagePullFromJson(const Json& j) {
  return Decode<ImagePull>("image_pull", [&] {
    ImagePull pull;
    pull.image = At<std::string>(j, "image");
    pull.done_bytes = ValueOr<int64_t>(j, "done_bytes", 0);
    pull.total_bytes = ValueOr<int64_t>(j, "total_bytes", 0);
    pull.finished = ValueOr<bool>(j, "finished", false);
    const int64_t took_ms = ValueOr<int64_t>(j, "took_ms", 0);
    // Bounded: the master puts the name in a job's message and events.
    if (pull.image.size() > kMaxImageReferenceLength || pull.done_bytes < 0 ||
        pull.total_bytes < 0 || took_ms < 0 || took_ms > kMaxGraceMs) {
      throw std::runtime_error("image too long, or a size or time out of range");
    }
    pull.took = std::chrono::milliseconds(took_ms);
    return pull;
  });
}

Json ToJson(const TaskReport& r) {
  Json j{{"task", ToJson(r.id)},
         {"state", TaskStateName(r.state)},
         {"exit_code", r.exit_code ? Json(*r.exit_code) : Json(nullptr)},
         {"signal", r.signal ? Json(*r.signal) : Json(nullptr)},
         {"pid", r.pid},
         {"started_at", TimeOrNull(r.started_at)},
         {"finished_at", TimeOrNull(r.finished_at)}};
  if (!r.message.empty()) j["message"] = r.message;
  if (r.start_failure) j["start_failure"] = StartFailureName(*r.start_failure);
  if (r.checkpoint_at) j["checkpoint_at"] = FormatTimestamp(*r.checkpoint_at);
  if (r.restored_from) j["restored_from"] = ToJson(*r.restored_from);
  if (r.image_pull) j["image_pull"] = ToJson(*r.image_pull);
  if (!r.samples.empty()) {
    Json samples = Json::array();
    for (const auto& s : r.samples) samples.push_back(ToJson(s));
    j["samples"] = samples;
  }
  return j;
}

StatusOr<TaskReport> TaskReportFromJson(const Json& j) {
  return Decode<TaskReport>("task report", [&] {
    TaskReport r;
    r.id = TaskIdOrThrow(Required(j, "task"));
    auto state = ParseTaskState(At<std::string>(j, "state"));
    if (!state) throw std::runtime_error("state: unknown task state");
    r.state = *state;
    r.exit_code = OptionalValue<int>(j, "exit_code");
    r.signal = OptionalValue<int>(j, "signal");
    r.pid = ValueOr<int64_t>(j, "pid", 0);
    r.started_at = OptionalTime(j, "started_at");
    r.finished_at = OptionalTime(j, "finished_at");
    r.message = ValueOr<std::string>(j, "message", "");
    if (auto kind = OptionalValue<std::string>(j, "start_failure")) {
      r.start_failure = ParseStartFailure(*kind);
    }
    r.checkpoint_at = OptionalTime(j, "checkpoint_at");
    if (auto it = j.find("restored_from"); it != j.end() && !it->is_null()) {
      r.restored_from = RestoredCheckpointFrom(*it);
    }
    if (auto it = j.find("image_pull"); it != j.end() && !it->is_null()) {
      auto pull = ImagePullFromJson(*it);
      if (!pull.ok()) throw std::runtime_error(pull.status().message());
      r.image_pull = std::move(*pull);
    }
    r.samples = SamplesFrom<TaskSample>(j, "samples", TaskSampleFrom);
    return r;
  });
}

Json ToJson(const AgentReport& r) {
  Json tasks = Json::array();
  for (const auto& t : r.tasks) tasks.push_back(ToJson(t));
  Json j{{"applied_version", r.applied_version}, {"tasks", tasks}};
  // Left out when empty, so that a report without samples reads as one from an older agent.
  if (!r.gpu_samples.empty()) {
    Json gpus = Json::array();
    for (const auto& g : r.gpu_samples) gpus.push_back(ToJson(g));
    j["gpu_samples"] = gpus;
  }
  if (!r.uploads.empty()) {
    Json uploads = Json::array();
    for (const auto& u : r.uploads) uploads.push_back(ToJson(u));
    j["uploads"] = uploads;
  }
  if (r.cached_datasets) j["cached_datasets"] = *r.cached_datasets;
  if (r.cached_images) j["cached_images"] = *r.cached_images;
  if (!r.prefetch_failures.empty()) j["prefetch_failures"] = r.prefetch_failures;
  return j;
}

namespace {

// A dataset cache's id of a version (store::DatasetCacheId): 32 lowercase hex digits.
bool IsDatasetCacheId(std::string_view id) {
  return id.size() == 32 && std::all_of(id.begin(), id.end(), [](char c) {
           return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f');
         });
}

}  // namespace

StatusOr<AgentReport> AgentReportFromJson(const Json& j) {
  AgentReport r;
  try {
    r.applied_version = ValueOr<uint64_t>(j, "applied_version", 0);
    for (const auto& t : ListAt(j, "tasks")) {
      COHORT_ASSIGN_OR_RETURN(auto task, TaskReportFromJson(t));
      r.tasks.push_back(std::move(task));
    }
    if (auto it = j.find("gpu_samples"); it != j.end() && !it->is_null()) {
      if (!it->is_array() || it->size() > static_cast<size_t>(kMaxNodeGpus)) {
        throw std::runtime_error(
            fmt::format("gpu_samples: must be a list of at most {} GPUs", kMaxNodeGpus));
      }
      for (const auto& g : *it) r.gpu_samples.push_back(GpuSamplesFrom(g));
    }
    if (auto it = j.find("uploads"); it != j.end() && !it->is_null()) {
      if (!it->is_array() || it->size() > kMaxUploadsPerReport) {
        throw std::runtime_error(
            fmt::format("uploads: must be a list of at most {} uploads", kMaxUploadsPerReport));
      }
      for (const auto& u : *it) {
        COHORT_ASSIGN_OR_RETURN(auto upload, UploadProgressFromJson(u));
        r.uploads.push_back(std::move(upload));
      }
    }
    if (auto it = j.find("cached_datasets"); it != j.end() && !it->is_null()) {
      if (!it->is_array() || it->size() > kMaxCachedDatasetsPerReport) {
        throw std::runtime_error(fmt::format("cached_datasets: must be a list of at most {} ids",
                                             kMaxCachedDatasetsPerReport));
      }
      r.cached_datasets.emplace();
      for (const auto& id : *it) {
        if (!id.is_string() || !IsDatasetCacheId(id.get_ref<const std::string&>())) {
          throw std::runtime_error("cached_datasets: each must be 32 lowercase hex digits");
        }
        r.cached_datasets->push_back(id.get<std::string>());
      }
    }
    if (auto it = j.find("cached_images"); it != j.end() && !it->is_null()) {
      if (!it->is_array() || it->size() > kMaxCachedImagesPerReport) {
        throw std::runtime_error(fmt::format(
            "cached_images: must be a list of at most {} references", kMaxCachedImagesPerReport));
      }
      r.cached_images.emplace();
      for (const auto& image : *it) {
        if (!image.is_string() || !ParseImageReference(image.get_ref<const std::string&>()).ok()) {
          throw std::runtime_error("cached_images: each must be an image reference");
        }
        r.cached_images->push_back(image.get<std::string>());
      }
    }
    if (auto it = j.find("prefetch_failures"); it != j.end() && !it->is_null()) {
      if (!it->is_object() || it->size() > kMaxPrefetchesPerNode) {
        throw std::runtime_error(fmt::format(
            "prefetch_failures: must be an object of at most {} ids", kMaxPrefetchesPerNode));
      }
      for (const auto& [id, why] : it->items()) {
        if (!IsDatasetCacheId(id) || !why.is_string() ||
            why.get_ref<const std::string&>().size() > kMaxPrefetchFailureBytes) {
          throw std::runtime_error(
              fmt::format("prefetch_failures: each must map 32 lowercase hex digits to a reason "
                          "of at most {} bytes",
                          kMaxPrefetchFailureBytes));
        }
        r.prefetch_failures[id] = why.get<std::string>();
      }
    }
  } catch (const std::exception& e) {
    return Status::InvalidArgument(fmt::format("malformed agent report: {}", JsonErrorText(e)));
  }
  return r;
}

Json ToJson(const DesiredState& d) {
  Json tasks = Json::array();
  for (const auto& t : d.tasks) tasks.push_back(ToJson(t));
  Json forget = Json::array();
  for (const auto& id : d.forget) forget.push_back(ToJson(id));
  Json allow = Json::object();
  for (const auto& [id, access] : d.allow_uploads) allow[id] = ToJson(access);
  Json j{{"version", d.version},
         {"tasks", tasks},
         {"forget", forget},
         {"node_timeout_ms", ToMillis(d.node_timeout)},
         {"allow_uploads", allow},
         {"refuse_uploads", d.refuse_uploads},
         {"forget_uploads", d.forget_uploads}};
  if (!d.prefetch.empty()) {
    Json prefetch = Json::array();
    for (const auto& p : d.prefetch) {
      prefetch.push_back(
          {{"ref", p.ref}, {"manifest_key", p.manifest_key}, {"store", ToJson(p.store)}});
    }
    j["prefetch"] = prefetch;
  }
  return j;
}

StatusOr<DesiredState> DesiredStateFromJson(const Json& j) {
  DesiredState d;
  try {
    d.version = At<uint64_t>(j, "version");
    for (const auto& t : ListAt(j, "tasks")) {
      COHORT_ASSIGN_OR_RETURN(auto launch, TaskLaunchFromJson(t));
      d.tasks.push_back(std::move(launch));
    }
    int64_t timeout_ms = ValueOr<int64_t>(j, "node_timeout_ms", 0);
    if (timeout_ms < 0 || timeout_ms > kMaxGraceMs) {
      throw std::runtime_error(fmt::format("node_timeout_ms: must be from 0 to {}", kMaxGraceMs));
    }
    d.node_timeout = std::chrono::milliseconds(timeout_ms);
    if (j.contains("forget")) {
      for (const auto& f : ListAt(j, "forget")) {
        COHORT_ASSIGN_OR_RETURN(auto id, TaskIdFromJson(f));
        d.forget.push_back(std::move(id));
      }
    }
    if (auto it = j.find("allow_uploads"); it != j.end() && !it->is_null()) {
      if (!it->is_object()) throw std::runtime_error("allow_uploads: must be an object");
      for (const auto& [id, access] : it->items()) {
        auto parsed = StoreAccessFromJson(access);
        if (!parsed.ok())
          throw std::runtime_error("allow_uploads." + id + ": " + parsed.status().message());
        d.allow_uploads[id] = std::move(*parsed);
      }
    }
    d.refuse_uploads = ValueOr<std::map<std::string, std::string>>(j, "refuse_uploads", {});
    d.forget_uploads = ValueOr<std::vector<std::string>>(j, "forget_uploads", {});
    if (auto it = j.find("prefetch"); it != j.end() && !it->is_null()) {
      if (!it->is_array() || it->size() > kMaxPrefetchesPerNode) {
        throw std::runtime_error(
            fmt::format("prefetch: must be a list of at most {}", kMaxPrefetchesPerNode));
      }
      for (const auto& p : *it) {
        auto access = StoreAccessFromJson(p.at("store"));
        if (!access.ok()) throw std::runtime_error("prefetch: " + access.status().message());
        d.prefetch.push_back(DatasetPrefetch{At<std::string>(p, "ref"),
                                             At<std::string>(p, "manifest_key"), *access});
      }
    }
  } catch (const std::exception& e) {
    return Status::InvalidArgument(fmt::format("malformed desired state: {}", JsonErrorText(e)));
  }
  return d;
}

StatusOr<std::string> EncodeRecord(const Json& doc, std::string_view what) {
  try {
    return doc.dump();
  } catch (const Json::exception& e) {
    return Status::InvalidArgument(fmt::format(
        "{}: a text field is not valid UTF-8 ({}); send UTF-8 text", what, JsonErrorText(e)));
  }
}

}  // namespace cohort
