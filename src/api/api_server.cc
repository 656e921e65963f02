#include "api/api_server.h"

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <boost/asio/post.hpp>
#include <regex>
#include <set>

#include "api/log_stream.h"
#include "common/strings.h"
#include "model/job_spec_parser.h"
#include "model/json.h"

namespace cohort::api {
namespace {

namespace net = boost::asio;

constexpr auto kTickInterval = std::chrono::milliseconds(500);
constexpr int64_t kMaxWaitMs = 60'000;

HttpResponse JsonResponse(int status, const Json& body) {
  return HttpResponse{status, "application/json", body.dump()};
}

StatusOr<int64_t> QueryInt(const HttpRequest& r, const std::string& name, int64_t fallback,
                           int64_t min, int64_t max) {
  auto it = r.query.find(name);
  if (it == r.query.end() || it->second.empty()) return fallback;
  try {
    size_t used = 0;
    int64_t v = std::stoll(it->second, &used);
    if (used == it->second.size() && v >= min && v <= max) return v;
  } catch (const std::exception&) {
  }
  return Status::InvalidArgument(
      fmt::format("{}: \"{}\" is not an integer from {} to {}", name, it->second, min, max));
}

StatusOr<JobId> ParseJobId(const std::string& text) {
  try {
    size_t used = 0;
    JobId id = std::stoll(text, &used);
    if (used == text.size() && id > 0) return id;
  } catch (const std::exception&) {
  }
  return Status::InvalidArgument(fmt::format("\"{}\" is not a job id", text));
}

Json NodeJson(const master::NodeStatus& status) {
  Json j = ToJson(status.node->info);
  j["state"] = NodeStateName(status.node->state);
  j["registered_at"] = FormatTimestamp(status.node->registered_at);
  j["last_seen"] = FormatTimestamp(status.node->last_seen);
  j["allocated"] = Json{{"gpus", status.allocated.gpus},
                        {"cpus", static_cast<double>(status.allocated.milli_cpus) / 1000.0},
                        {"memory_bytes", status.allocated.memory_bytes}};
  for (auto& gpu : j["gpus"]) {
    auto it = status.gpu_holders.find(gpu["index"].get<int>());
    if (it == status.gpu_holders.end()) {
      gpu["job_id"] = nullptr;
      gpu["task"] = nullptr;
    } else {
      gpu["job_id"] = it->second.job_id;
      gpu["task"] = it->second.task;
    }
  }
  return j;
}

Json TeamJson(const master::TeamStatus& t) {
  return Json{{"name", t.quota.name},
              {"guaranteed_gpus", t.quota.guaranteed_gpus},
              {"max_gpus", t.quota.max_gpus ? Json(*t.quota.max_gpus) : Json(nullptr)},
              {"implicit", t.implicit},
              {"used_gpus", t.held.gpus},
              {"used_cpus", static_cast<double>(t.held.milli_cpus) / 1000.0},
              {"used_memory_bytes", t.held.memory_bytes},
              {"running_jobs", t.running_jobs},
              {"pending_jobs", t.pending_jobs}};
}

}  // namespace

int HttpStatusFor(StatusCode code) {
  switch (code) {
    case StatusCode::kOk:
      return 200;
    case StatusCode::kInvalidArgument:
      return 400;
    case StatusCode::kNotFound:
      return 404;
    case StatusCode::kAlreadyExists:
    case StatusCode::kFailedPrecondition:
      return 409;
    case StatusCode::kUnavailable:
      return 503;
    case StatusCode::kDeadlineExceeded:
      return 504;
    case StatusCode::kInternal:
      return 500;
  }
  return 500;
}

HttpResponse ErrorResponse(const Status& status) {
  Json error{{"code", StatusCodeName(status.code())}, {"message", status.message()}};
  if (!status.details().empty()) error["details"] = status.details();
  return JsonResponse(HttpStatusFor(status.code()), Json{{"error", error}});
}

struct ApiServer::JobWaiter {
  JobId id = 0;
  uint64_t min_version = 0;
  std::shared_ptr<Responder> responder;
  std::shared_ptr<net::steady_timer> timer;
};

struct ApiServer::NodeWaiter {
  std::string node_id;
  uint64_t min_version = 0;
  std::vector<TaskId> forget;
  std::shared_ptr<Responder> responder;
  std::shared_ptr<net::steady_timer> timer;
};

ApiServer::ApiServer(net::io_context& ioc, master::Master& master)
    : ioc_(ioc),
      master_(master),
      http_(ioc, [this](HttpRequest r, std::shared_ptr<Responder> w) { Handle(std::move(r), w); }),
      tick_timer_(ioc) {
  master_.SetListener(this);
}

ApiServer::~ApiServer() {
  Stop();
  master_.SetListener(nullptr);
}

Status ApiServer::Listen(const std::string& host, int port) {
  COHORT_RETURN_IF_ERROR(http_.Listen(host, port));
  ScheduleTick();
  return Status::Ok();
}

void ApiServer::Stop() {
  stopped_ = true;
  http_.Stop();
  tick_timer_.cancel();
  for (auto& [id, w] : job_waiters_) w->timer->cancel();
  for (auto& [id, w] : node_waiters_) w->timer->cancel();
}

void ApiServer::ScheduleTick() {
  tick_timer_.expires_after(kTickInterval);
  tick_timer_.async_wait([this](boost::system::error_code ec) {
    if (ec || stopped_) return;
    master_.Tick();
    ScheduleTick();
  });
}

// Wake-ups are posted, not run inline: the change that triggers them is still being made (and
// written to the store) when the master calls the listener.
void ApiServer::OnJobChanged(JobId id) {
  // Log streams only schedule a step when woken, so they may be told at once.
  job_changes_.Notify(id);
  if (!job_waiters_.count(id)) return;
  net::post(ioc_, [this, id] { WakeJobWaiters(id); });
}

void ApiServer::OnNodeChanged(const std::string& node_id) {
  if (!node_waiters_.count(node_id)) return;
  net::post(ioc_, [this, node_id] { WakeNodeWaiters(node_id); });
}

void ApiServer::WakeJobWaiters(JobId id) {
  auto job = master_.GetJob(id);
  if (!job.ok()) return;
  auto [begin, end] = job_waiters_.equal_range(id);
  for (auto it = begin; it != end;) {
    if ((*job)->version > it->second->min_version) {
      it->second->timer->cancel();
      it->second->responder->Send(JsonResponse(200, ToJson(**job)));
      it = job_waiters_.erase(it);
    } else {
      ++it;
    }
  }
}

void ApiServer::WakeNodeWaiters(const std::string& node_id) {
  auto [begin, end] = node_waiters_.equal_range(node_id);
  for (auto it = begin; it != end;) {
    auto desired = master_.DesiredFor(node_id);
    if (desired.ok() && desired->version > it->second->min_version) {
      desired->forget = it->second->forget;
      it->second->timer->cancel();
      it->second->responder->Send(JsonResponse(200, ToJson(*desired)));
      it = node_waiters_.erase(it);
    } else {
      ++it;
    }
  }
}

void ApiServer::Handle(HttpRequest request, std::shared_ptr<Responder> responder) {
  std::vector<std::string> seg = Split(request.path, '/');
  // "/api/v1/jobs/3" -> ["", "api", "v1", "jobs", "3"]
  if (!seg.empty() && seg.back().empty() && seg.size() > 1) seg.pop_back();
  const std::string& m = request.method;
  auto not_allowed = [&] {
    responder->Send(ErrorResponse(
        Status::InvalidArgument(fmt::format("{} is not allowed on {}", m, request.path))));
  };
  if (seg.size() < 4 || seg[1] != "api" || seg[2] != "v1") {
    return responder->Send(ErrorResponse(Status::NotFound(
        fmt::format("no such endpoint: {}; the API lives under /api/v1", request.path))));
  }
  const std::string& resource = seg[3];
  size_t n = seg.size();
  if (resource == "health" && n == 4) {
    return responder->Send(JsonResponse(200, Json{{"status", "ok"}}));
  }
  if (resource == "jobs") {
    if (n == 4) {
      if (m == "POST") return SubmitJob(request, *responder);
      if (m == "GET") return ListJobs(request, *responder);
      return not_allowed();
    }
    auto id = ParseJobId(seg[4]);
    if (!id.ok()) return responder->Send(ErrorResponse(id.status()));
    if (n == 5) {
      if (m == "GET") return GetJob(*id, request, responder);
      return not_allowed();
    }
    if (n == 6 && seg[5] == "kill") {
      if (m != "POST") return not_allowed();
      auto job = master_.Kill(*id);
      if (!job.ok()) return responder->Send(ErrorResponse(job.status()));
      return responder->Send(JsonResponse(200, ToJson(**job)));
    }
    if (n == 6 && seg[5] == "events") {
      if (m != "GET") return not_allowed();
      auto events = master_.Events(*id);
      if (!events.ok()) return responder->Send(ErrorResponse(events.status()));
      Json list = Json::array();
      for (const auto& e : *events) list.push_back(ToJson(e));
      return responder->Send(JsonResponse(200, Json{{"events", list}}));
    }
    if (n == 6 && seg[5] == "explain") {
      if (m != "GET") return not_allowed();
      auto e = master_.Explain(*id);
      if (!e.ok()) return responder->Send(ErrorResponse(e.status()));
      return responder->Send(JsonResponse(
          200, Json{{"job_id", *id},
                    {"state", JobStateName(e->state)},
                    {"summary", e->summary},
                    {"details", e->details},
                    {"unschedulable", e->unschedulable},
                    {"reserved_start", e->reserved_start ? Json(FormatTimestamp(*e->reserved_start))
                                                         : Json(nullptr)}}));
    }
    if (n == 6 && seg[5] == "logs") {
      if (m != "GET") return not_allowed();
      return StreamLogs(*id, request, responder);
    }
  }
  if (resource == "teams") {
    if (n == 4) {
      if (m != "GET") return not_allowed();
      return ListTeams(*responder);
    }
    if (n == 5) {
      if (m == "PUT") return SetTeam(seg[4], request, *responder);
      if (m == "DELETE") {
        Status s = master_.DeleteTeam(seg[4]);
        if (!s.ok()) return responder->Send(ErrorResponse(s));
        return responder->Send(JsonResponse(200, Json{{"deleted", seg[4]}}));
      }
      if (m == "GET") {
        for (const auto& t : master_.ListTeams()) {
          if (t.quota.name == seg[4]) return responder->Send(JsonResponse(200, TeamJson(t)));
        }
        return responder->Send(
            ErrorResponse(Status::NotFound(fmt::format("team {} does not exist", seg[4]))));
      }
      return not_allowed();
    }
  }
  if (resource == "nodes" && n == 4) {
    if (m != "GET") return not_allowed();
    return ListNodes(*responder);
  }
  if (resource == "agents") {
    if (n == 5 && seg[4] == "register") {
      if (m != "POST") return not_allowed();
      return RegisterAgent(request, *responder);
    }
    if (n == 6 && seg[5] == "sync") {
      if (m != "POST") return not_allowed();
      return SyncAgent(seg[4], request, responder);
    }
    if (n == 7 && seg[5] == "logs") {
      if (m != "POST") return not_allowed();
      return UploadLog(seg[4], seg[6], request, *responder);
    }
  }
  responder->Send(
      ErrorResponse(Status::NotFound(fmt::format("no such endpoint: {} {}", m, request.path))));
}

void ApiServer::SubmitJob(const HttpRequest& request, Responder& responder) {
  std::string user = "unknown";
  if (auto it = request.headers.find("x-cohort-user"); it != request.headers.end()) {
    static const std::regex kUser("[A-Za-z0-9._@-]{1,64}");
    if (!std::regex_match(it->second, kUser)) {
      return responder.Send(ErrorResponse(Status::InvalidArgument(
          "X-Cohort-User: must be 1-64 letters, digits, '.', '_', '@' or '-'")));
    }
    user = it->second;
  }
  auto spec = ParseJobSpec(request.body, "job spec");
  if (!spec.ok()) return responder.Send(ErrorResponse(spec.status()));
  auto job = master_.Submit(std::move(spec).value(), user);
  if (!job.ok()) return responder.Send(ErrorResponse(job.status()));
  responder.Send(JsonResponse(201, ToJson(*job)));
}

void ApiServer::ListJobs(const HttpRequest& request, Responder& responder) {
  master::JobFilter filter;
  if (auto it = request.query.find("state"); it != request.query.end() && !it->second.empty()) {
    filter.state = ParseJobState(it->second);
    if (!filter.state) {
      return responder.Send(ErrorResponse(Status::InvalidArgument(fmt::format(
          "state: \"{}\" is not a job state; use one of PENDING, STARTING, RUNNING, STOPPING, "
          "SUCCEEDED, FAILED, KILLED",
          it->second))));
    }
  }
  auto limit = QueryInt(request, "limit", 0, 0, 1'000'000);
  if (!limit.ok()) return responder.Send(ErrorResponse(limit.status()));
  filter.limit = static_cast<size_t>(*limit);
  Json jobs = Json::array();
  for (const Job* job : master_.ListJobs(filter)) jobs.push_back(ToJson(*job));
  responder.Send(JsonResponse(200, Json{{"jobs", jobs}}));
}

void ApiServer::GetJob(JobId id, const HttpRequest& request, std::shared_ptr<Responder> responder) {
  auto job = master_.GetJob(id);
  if (!job.ok()) return responder->Send(ErrorResponse(job.status()));
  if (!request.query.count("wait_version")) {
    return responder->Send(JsonResponse(200, ToJson(**job)));
  }
  auto min_version = QueryInt(request, "wait_version", 0, 0, INT64_MAX);
  auto timeout = QueryInt(request, "timeout_ms", 30'000, 0, kMaxWaitMs);
  if (!min_version.ok()) return responder->Send(ErrorResponse(min_version.status()));
  if (!timeout.ok()) return responder->Send(ErrorResponse(timeout.status()));
  if ((*job)->version > static_cast<uint64_t>(*min_version) || *timeout == 0) {
    return responder->Send(JsonResponse(200, ToJson(**job)));
  }
  auto waiter = std::make_shared<JobWaiter>();
  waiter->id = id;
  waiter->min_version = static_cast<uint64_t>(*min_version);
  waiter->responder = responder;
  waiter->timer = std::make_shared<net::steady_timer>(ioc_);
  waiter->timer->expires_after(std::chrono::milliseconds(*timeout));
  job_waiters_.emplace(id, waiter);
  waiter->timer->async_wait([this, waiter](boost::system::error_code ec) {
    if (ec) return;  // woken by a change
    auto [begin, end] = job_waiters_.equal_range(waiter->id);
    for (auto it = begin; it != end; ++it) {
      if (it->second == waiter) {
        job_waiters_.erase(it);
        break;
      }
    }
    auto job = master_.GetJob(waiter->id);
    if (job.ok()) waiter->responder->Send(JsonResponse(200, ToJson(**job)));
  });
}

void ApiServer::StreamLogs(JobId id, const HttpRequest& request,
                           std::shared_ptr<Responder> responder) {
  auto job_or = master_.GetJob(id);
  if (!job_or.ok()) return responder->Send(ErrorResponse(job_or.status()));
  const Job& job = **job_or;
  std::optional<int> attempt;
  if (request.query.count("attempt")) {
    auto a = QueryInt(request, "attempt", 0, 1, 1'000'000);
    if (!a.ok()) return responder->Send(ErrorResponse(a.status()));
    if (*a > job.attempt) {
      return responder->Send(ErrorResponse(Status::NotFound(
          fmt::format("job {} has no attempt {} (it is at attempt {})", id, *a, job.attempt))));
    }
    attempt = static_cast<int>(*a);
  }
  std::optional<std::pair<std::string, int>> task;
  if (auto it = request.query.find("task"); it != request.query.end() && !it->second.empty()) {
    auto parts = Split(it->second, '/');
    std::vector<std::string> names;
    bool found = false;
    std::set<std::string> all;
    for (const auto& g : job.spec.tasks) {
      for (int i = 0; i < g.replicas; ++i) all.insert(fmt::format("{}/{}", g.role, i));
    }
    for (const auto& t : job.tasks) all.insert(t.Name());  // elastic replicas too
    for (const auto& name : all) {
      names.push_back(name);
      if (name == it->second) found = true;
    }
    if (!found) {
      return responder->Send(ErrorResponse(Status::NotFound(fmt::format(
          "job {} has no task {}; its tasks are {}", id, it->second, Join(names, ", ")))));
    }
    // A name from the list just checked: "<role>/<index>".
    task = std::make_pair(parts[0], static_cast<int>(*ParseInteger(parts[1], 0, INT32_MAX)));
  }
  bool follow = false;
  if (auto it = request.query.find("follow"); it != request.query.end()) {
    follow = it->second == "true" || it->second == "1" || it->second.empty();
  }
  LogStream::Options options{id, attempt, task, follow};
  std::make_shared<LogStream>(ioc_, master_, job_changes_, std::move(options), responder)->Start();
}

void ApiServer::ListTeams(Responder& responder) {
  Json teams = Json::array();
  for (const auto& t : master_.ListTeams()) teams.push_back(TeamJson(t));
  responder.Send(JsonResponse(200, Json{{"teams", teams}}));
}

void ApiServer::SetTeam(const std::string& name, const HttpRequest& request, Responder& responder) {
  auto doc = ParseJson(request.body);
  if (!doc.ok()) return responder.Send(ErrorResponse(doc.status()));
  TeamQuota team;
  team.name = name;
  std::vector<std::string> problems;
  if (!doc->is_object()) {
    return responder.Send(ErrorResponse(Status::InvalidArgument(
        "the body must be an object: {\"guaranteed_gpus\": N, \"max_gpus\": M or null}")));
  }
  for (const auto& [key, value] : doc->items()) {
    if (key == "guaranteed_gpus") {
      if (!value.is_number_integer()) {
        problems.push_back("guaranteed_gpus: must be an integer");
      } else {
        team.guaranteed_gpus = value.get<int64_t>();
      }
    } else if (key == "max_gpus") {
      if (value.is_null()) continue;
      if (!value.is_number_integer()) {
        problems.push_back("max_gpus: must be an integer or null");
      } else {
        team.max_gpus = value.get<int64_t>();
      }
    } else {
      problems.push_back(
          fmt::format("{}: unknown field; expected guaranteed_gpus or max_gpus", key));
    }
  }
  if (!doc->contains("guaranteed_gpus")) problems.push_back("guaranteed_gpus: required");
  if (!problems.empty()) {
    return responder.Send(ErrorResponse(Status::InvalidArgument("invalid team", problems)));
  }
  auto saved = master_.SetTeam(team);
  if (!saved.ok()) return responder.Send(ErrorResponse(saved.status()));
  for (const auto& t : master_.ListTeams()) {
    if (t.quota.name == name) return responder.Send(JsonResponse(200, TeamJson(t)));
  }
  responder.Send(JsonResponse(200, Json{{"name", name}}));
}

void ApiServer::ListNodes(Responder& responder) {
  Json nodes = Json::array();
  for (const auto& status : master_.ListNodes()) nodes.push_back(NodeJson(status));
  responder.Send(JsonResponse(200, Json{{"nodes", nodes}}));
}

void ApiServer::RegisterAgent(const HttpRequest& request, Responder& responder) {
  auto doc = ParseJson(request.body);
  if (!doc.ok()) return responder.Send(ErrorResponse(doc.status()));
  auto info = NodeInfoFromJson(*doc);
  if (!info.ok()) return responder.Send(ErrorResponse(info.status()));
  std::string id = info->id;
  auto desired = master_.Register(std::move(info).value());
  if (!desired.ok()) return responder.Send(ErrorResponse(desired.status()));
  responder.Send(JsonResponse(200, Json{{"node_id", id}, {"desired", ToJson(*desired)}}));
}

void ApiServer::SyncAgent(const std::string& node_id, const HttpRequest& request,
                          std::shared_ptr<Responder> responder) {
  auto doc = ParseJson(request.body);
  if (!doc.ok()) return responder->Send(ErrorResponse(doc.status()));
  auto report = AgentReportFromJson(*doc);
  if (!report.ok()) return responder->Send(ErrorResponse(report.status()));
  auto min_version = QueryInt(request, "wait_version", 0, 0, INT64_MAX);
  auto timeout = QueryInt(request, "timeout_ms", 0, 0, kMaxWaitMs);
  if (!min_version.ok()) return responder->Send(ErrorResponse(min_version.status()));
  if (!timeout.ok()) return responder->Send(ErrorResponse(timeout.status()));
  auto desired = master_.Sync(node_id, *report);
  if (!desired.ok()) return responder->Send(ErrorResponse(desired.status()));
  if (desired->version > static_cast<uint64_t>(*min_version) || *timeout == 0 ||
      !desired->forget.empty()) {
    return responder->Send(JsonResponse(200, ToJson(*desired)));
  }
  auto waiter = std::make_shared<NodeWaiter>();
  waiter->node_id = node_id;
  waiter->min_version = static_cast<uint64_t>(*min_version);
  waiter->responder = responder;
  waiter->timer = std::make_shared<net::steady_timer>(ioc_);
  waiter->timer->expires_after(std::chrono::milliseconds(*timeout));
  node_waiters_.emplace(node_id, waiter);
  waiter->timer->async_wait([this, waiter](boost::system::error_code ec) {
    if (ec) return;
    auto [begin, end] = node_waiters_.equal_range(waiter->node_id);
    for (auto it = begin; it != end; ++it) {
      if (it->second == waiter) {
        node_waiters_.erase(it);
        break;
      }
    }
    auto desired = master_.DesiredFor(waiter->node_id);
    if (desired.ok()) {
      waiter->responder->Send(JsonResponse(200, ToJson(*desired)));
    } else {
      waiter->responder->Send(ErrorResponse(desired.status()));
    }
  });
}

void ApiServer::UploadLog(const std::string& node_id, const std::string& task_key,
                          const HttpRequest& request, Responder& responder) {
  auto offset = QueryInt(request, "offset", -1, 0, INT64_MAX);
  if (!offset.ok()) return responder.Send(ErrorResponse(offset.status()));
  if (*offset < 0) {
    return responder.Send(ErrorResponse(Status::InvalidArgument("offset: required")));
  }
  auto task = ParseTaskId(task_key);
  if (!task.ok()) return responder.Send(ErrorResponse(task.status()));
  auto size = master_.AppendLog(node_id, *task, *offset, request.body);
  if (size.ok()) return responder.Send(JsonResponse(200, Json{{"size", *size}}));
  HttpResponse error = ErrorResponse(size.status());
  if (size.status().code() == StatusCode::kFailedPrecondition) {
    // Tell the agent where to resume.
    Json body = Json::parse(error.body);
    auto stored = master_.logs().Size(*task);
    body["size"] = stored.ok() ? *stored : 0;
    error.body = body.dump();
  }
  responder.Send(error);
}

}  // namespace cohort::api
