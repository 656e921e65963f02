#include "client/cohort_client.h"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <iterator>
#include <random>
#include <thread>

#include "model/limits.h"
#include "model/secret.h"

namespace cohort::client {
namespace {

StatusCode CodeFromName(std::string_view name, int http_status) {
  auto code = Parse(kStatusCodeNames, name);
  if (code && *code != StatusCode::kOk) return *code;
  if (http_status == 404) return StatusCode::kNotFound;
  if (http_status == 409) return StatusCode::kFailedPrecondition;
  if (http_status / 100 == 4) return StatusCode::kInvalidArgument;
  return StatusCode::kInternal;
}

// `text` with all but unreserved characters (and `keep`) percent-encoded.
std::string PercentEncode(std::string_view text, std::string_view keep = "") {
  std::string out;
  for (unsigned char c : text) {
    if (std::isalnum(c) || c == '-' || c == '.' || c == '_' || c == '~' ||
        keep.find(static_cast<char>(c)) != std::string_view::npos) {
      out += static_cast<char>(c);
    } else {
      out += fmt::format("%{:02X}", c);
    }
  }
  return out;
}

// "?a=1&b=x%20y", percent-encoding all but unreserved characters; empty values left out.
std::string QueryString(const CohortClient::Query& query) {
  auto encode = [](std::string_view text) { return PercentEncode(text); };
  std::string out;
  for (const auto& [name, value] : query) {
    if (value.empty()) continue;
    out += out.empty() ? "?" : "&";
    out += encode(name) + "=" + encode(value);
  }
  return out;
}

}  // namespace

Status StatusFromErrorBody(int http_status, std::string_view body) {
  auto doc = ParseJson(body);
  if (doc.ok() && doc->is_object() && doc->contains("error") && (*doc)["error"].is_object()) {
    const Json& e = (*doc)["error"];
    std::vector<std::string> details;
    if (e.contains("details") && e["details"].is_array()) {
      for (const auto& d : e["details"]) {
        if (d.is_string()) details.push_back(d.get<std::string>());
      }
    }
    // Read with care: a body that is not the API's (a proxy's, a newer master's) must still
    // become a Status, and Json::value throws when a field has another type.
    auto text = [&](const char* key, const char* fallback) {
      auto it = e.find(key);
      return it != e.end() && it->is_string() ? it->get<std::string>() : std::string(fallback);
    };
    return Status(CodeFromName(text("code", ""), http_status), text("message", "unknown error"),
                  std::move(details));
  }
  return Status(CodeFromName("", http_status),
                fmt::format("HTTP {}: {}", http_status, body.substr(0, 200)));
}

StatusOr<std::unique_ptr<CohortClient>> CohortClient::Create(std::string_view master_url,
                                                             std::string token,
                                                             const TlsOptions& tls) {
  COHORT_ASSIGN_OR_RETURN(auto http, HttpClient::Create(master_url, tls));
  auto client = std::unique_ptr<CohortClient>(new CohortClient(std::move(http)));
  client->SetToken(token);
  return client;
}

void CohortClient::SetToken(const std::string& token) {
  http_->SetHeader("Authorization", token.empty() ? std::string() : "Bearer " + token);
}

Status CohortClient::Health() {
  return Call("GET", "/api/v1/health", {}, "application/json", std::chrono::seconds(2)).status();
}
StatusOr<Json> CohortClient::WhoAmI() { return Call("GET", "/api/v1/whoami"); }
StatusOr<Json> CohortClient::Users() { return Call("GET", "/api/v1/users"); }
StatusOr<Json> CohortClient::User(const std::string& name) {
  return Call("GET", "/api/v1/users/" + name);
}
StatusOr<Json> CohortClient::CreateUser(const Json& user) {
  return Call("POST", "/api/v1/users", user.dump());
}
StatusOr<Json> CohortClient::UpdateUser(const std::string& name, const Json& change) {
  return Call("PATCH", "/api/v1/users/" + name, change.dump());
}
Status CohortClient::DeleteUser(const std::string& name) {
  return Call("DELETE", "/api/v1/users/" + name).status();
}
StatusOr<Json> CohortClient::Members(const std::string& team) {
  return Call("GET", fmt::format("/api/v1/teams/{}/members", team));
}
StatusOr<Json> CohortClient::SetMember(const std::string& team, const std::string& user,
                                       const std::string& role) {
  return Call("PUT", fmt::format("/api/v1/teams/{}/members/{}", team, user),
              Json{{"role", role}}.dump());
}
StatusOr<Json> CohortClient::RemoveMember(const std::string& team, const std::string& user) {
  return Call("DELETE", fmt::format("/api/v1/teams/{}/members/{}", team, user));
}
StatusOr<Json> CohortClient::Tokens(const std::string& user) {
  return Call("GET", user.empty() ? std::string("/api/v1/tokens") : "/api/v1/tokens?user=" + user);
}
StatusOr<Json> CohortClient::CreateToken(const Json& request) {
  return Call("POST", "/api/v1/tokens", request.dump());
}
StatusOr<Json> CohortClient::CreateSignInCode() {
  return Call("POST", "/api/v1/auth/signin-codes");
}
StatusOr<Json> CohortClient::NotebookLink(JobId id) {
  return Call("POST", fmt::format("/api/v1/jobs/{}/notebook-link", id));
}
StatusOr<Json> CohortClient::NotebookStatus(JobId id) {
  return Call("GET", fmt::format("/api/v1/jobs/{}/notebook/api/status", id));
}
StatusOr<Json> CohortClient::RevokeToken(const std::string& id) {
  return Call("DELETE", "/api/v1/tokens/" + id);
}

StatusOr<Json> CohortClient::Secrets() { return Call("GET", "/api/v1/secrets"); }
StatusOr<Json> CohortClient::SetSecret(const std::string& name, const std::string& value,
                                       const std::string& team) {
  // Checked here, not only by the master: JSON cannot carry what is not UTF-8.
  COHORT_RETURN_IF_ERROR(ValidateSecretValue(value));
  Json body{{"value", value}};
  if (!team.empty()) body["team"] = team;
  return Call("PUT", "/api/v1/secrets/" + name, body.dump());
}
StatusOr<Json> CohortClient::DeleteSecret(const std::string& name, const std::string& team) {
  return Call("DELETE", "/api/v1/secrets/" + name + (team.empty() ? "" : "?team=" + team));
}

StatusOr<Json> CohortClient::Call(std::string_view method, std::string_view target,
                                  std::string_view body, std::string_view content_type,
                                  Duration timeout,
                                  std::vector<std::pair<std::string, std::string>> headers) {
  COHORT_ASSIGN_OR_RETURN(HttpResult r,
                          http_->Request(method, target, body, content_type, timeout, headers));
  if (r.status / 100 != 2) return StatusFromErrorBody(r.status, r.body);
  auto doc = ParseJson(r.body);
  if (!doc.ok()) {
    return Status::Internal(
        fmt::format("the master answered {} with something that is not JSON", target));
  }
  return doc;
}

std::string NewRequestId() {
  std::random_device random;
  std::string id;
  for (int i = 0; i < 4; ++i) id += fmt::format("{:08x}", random());
  return id;
}

StatusOr<Job> CohortClient::Submit(std::string_view spec_text, std::string request_id) {
  if (request_id.empty()) request_id = NewRequestId();
  // Retrying is safe only because the key comes along: the master creates the job once.
  constexpr int kTries = 5;
  Duration pause = std::chrono::seconds(1);
  for (int attempt = 1;; ++attempt) {
    auto doc = Call("POST", "/api/v1/jobs", spec_text, "application/yaml", std::chrono::seconds(30),
                    {{"Idempotency-Key", request_id}});
    if (doc.ok()) return JobFromJson(*doc);
    StatusCode code = doc.status().code();
    bool unanswered = code == StatusCode::kUnavailable || code == StatusCode::kDeadlineExceeded;
    if (!unanswered || attempt == kTries) return doc.status();
    std::this_thread::sleep_for(pause);
    pause *= 2;
  }
}

StatusOr<JobListPage> CohortClient::ListJobPage(const std::string& query) {
  COHORT_ASSIGN_OR_RETURN(Json doc, Call("GET", "/api/v1/jobs?" + query));
  JobListPage page;
  for (const auto& j : doc.at("jobs")) {
    COHORT_ASSIGN_OR_RETURN(Job job, JobFromJson(j));
    page.jobs.push_back(std::move(job));
  }
  if (auto next = doc.find("next"); next != doc.end() && next->is_number_integer()) {
    page.next = next->get<JobId>();
  }
  return page;
}

namespace {

std::string StateParam(std::optional<JobState> state) {
  return state ? std::string("&state=") + JobStateName(*state) : std::string();
}

}  // namespace

Status CohortClient::EachJobPage(std::optional<JobState> state,
                                 const std::function<Status(JobListPage)>& on_page) {
  std::string after;  // empty: from the oldest
  for (JobId last = 0;;) {
    COHORT_ASSIGN_OR_RETURN(
        JobListPage page,
        ListJobPage(fmt::format("limit={}&after={}{}", kMaxJobPage, after, StateParam(state))));
    std::optional<JobId> next = page.next;
    COHORT_RETURN_IF_ERROR(on_page(std::move(page)));
    if (!next) return Status::Ok();
    if (*next <= last) {  // a master that never ends the walk
      return Status::Internal(fmt::format(
          "the master's jobs list went back: after job {}, the next page starts after job {}", last,
          *next));
    }
    last = *next;
    after = std::to_string(last);
  }
}

StatusOr<std::vector<Job>> CohortClient::ListJobs(std::optional<JobState> state, size_t limit) {
  std::vector<Job> jobs;
  if (limit == 0) {
    COHORT_RETURN_IF_ERROR(EachJobPage(state, [&](JobListPage page) {
      std::move(page.jobs.begin(), page.jobs.end(), std::back_inserter(jobs));
      return Status::Ok();
    }));
    return jobs;
  }
  // Newest first through the `before` cursor until there are `limit`, then turned around.
  std::string before;  // empty: from the newest
  while (jobs.size() < limit) {
    size_t want = std::min(limit - jobs.size(), kMaxJobPage);
    COHORT_ASSIGN_OR_RETURN(JobListPage page, ListJobPage(fmt::format("limit={}&before={}{}", want,
                                                                      before, StateParam(state))));
    if (page.jobs.empty()) break;  // nothing older, whatever `next` says
    std::move(page.jobs.begin(), page.jobs.end(), std::back_inserter(jobs));
    if (!page.next) break;
    before = std::to_string(*page.next);
  }
  std::reverse(jobs.begin(), jobs.end());
  return jobs;
}

StatusOr<Job> CohortClient::GetJob(JobId id) {
  COHORT_ASSIGN_OR_RETURN(Json doc, Call("GET", fmt::format("/api/v1/jobs/{}", id)));
  return JobFromJson(doc);
}

StatusOr<Job> CohortClient::WaitJob(JobId id, uint64_t version, Duration timeout) {
  int64_t ms = std::max<int64_t>(0, std::min<int64_t>(ToMillis(timeout), 60'000));
  COHORT_ASSIGN_OR_RETURN(
      Json doc,
      Call("GET", fmt::format("/api/v1/jobs/{}?wait_version={}&timeout_ms={}", id, version, ms), {},
           "application/json", std::chrono::milliseconds(ms + 10'000)));
  return JobFromJson(doc);
}

StatusOr<Job> CohortClient::Kill(JobId id) {
  COHORT_ASSIGN_OR_RETURN(Json doc, Call("POST", fmt::format("/api/v1/jobs/{}/kill", id)));
  return JobFromJson(doc);
}

StatusOr<std::unique_ptr<UpgradedConnection>> CohortClient::AttachTerminal(
    JobId id, int cols, int rows, const std::string& term) {
  std::string target = fmt::format("/api/v1/jobs/{}/terminal?cols={}&rows={}", id, cols, rows);
  // A $TERM the master would refuse is not sent: the shell gets "xterm" instead.
  if (!term.empty() && term.size() <= 64 &&
      term.find_first_not_of(
          "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789.+-_") ==
          std::string::npos) {
    target += "&term=" + term;
  }
  COHORT_ASSIGN_OR_RETURN(UpgradeResult result, http_->Upgrade(target, "cohort-terminal"));
  if (result.connection) return std::move(result.connection);
  return StatusFromErrorBody(result.answer.status, result.answer.body);
}

StatusOr<Json> CohortClient::GetArray(JobId id) {
  return Call("GET", fmt::format("/api/v1/arrays/{}", id));
}

StatusOr<Json> CohortClient::KillArray(JobId id) {
  return Call("POST", fmt::format("/api/v1/arrays/{}/kill", id));
}

StatusOr<std::vector<JobEvent>> CohortClient::Events(JobId id) {
  std::vector<JobEvent> events;
  for (;;) {
    COHORT_ASSIGN_OR_RETURN(Json doc,
                            Call("GET", fmt::format("/api/v1/jobs/{}/events?limit={}&after={}", id,
                                                    kMaxEventPage, events.size())));
    size_t before = events.size();
    for (const auto& j : doc.at("events")) {
      COHORT_ASSIGN_OR_RETURN(JobEvent e, JobEventFromJson(j));
      events.push_back(std::move(e));
    }
    auto next = doc.find("next");
    if (next == doc.end() || !next->is_number_integer()) return events;
    if (events.size() == before || next->get<size_t>() != events.size()) {
      return Status::Internal(
          fmt::format("the master's events of job {} do not add up: after {}, "
                      "the next page starts after {}",
                      id, events.size(), next->dump()));
    }
  }
}

StatusOr<Json> CohortClient::Explain(JobId id) {
  return Call("GET", fmt::format("/api/v1/jobs/{}/explain", id));
}

Status CohortClient::Logs(JobId id, std::string_view task, int attempt, bool follow,
                          const std::function<bool(std::string_view)>& on_data) {
  std::string target = fmt::format("/api/v1/jobs/{}/logs?follow={}", id, follow ? "true" : "false");
  if (!task.empty()) target += fmt::format("&task={}", task);
  if (attempt > 0) target += fmt::format("&attempt={}", attempt);
  COHORT_ASSIGN_OR_RETURN(HttpResult r, http_->Stream(target, on_data));
  if (r.status / 100 != 2) return StatusFromErrorBody(r.status, r.body);
  return Status::Ok();
}

StatusOr<Json> CohortClient::Nodes() { return Call("GET", "/api/v1/nodes"); }

StatusOr<Json> CohortClient::SubmitSweep(std::string_view spec_text) {
  return Call("POST", "/api/v1/sweeps", spec_text);
}

StatusOr<Json> CohortClient::Sweeps() { return Call("GET", "/api/v1/sweeps"); }

StatusOr<Json> CohortClient::Sweep(int64_t id) {
  return Call("GET", fmt::format("/api/v1/sweeps/{}", id));
}

StatusOr<Json> CohortClient::SweepAction(int64_t id, std::string_view action) {
  return Call("POST", fmt::format("/api/v1/sweeps/{}/{}", id, action), "{}");
}

StatusOr<Json> CohortClient::DrainNode(const std::string& node, const std::string& reason) {
  return Call("POST", fmt::format("/api/v1/nodes/{}/drain", node), Json{{"reason", reason}}.dump());
}

StatusOr<Json> CohortClient::UndrainNode(const std::string& node) {
  return Call("POST", fmt::format("/api/v1/nodes/{}/undrain", node), "{}");
}

Status CohortClient::RemoveNode(const std::string& node) {
  return Call("DELETE", fmt::format("/api/v1/nodes/{}", node)).status();
}

StatusOr<Json> CohortClient::Teams() { return Call("GET", "/api/v1/teams"); }

StatusOr<Json> CohortClient::SetTeam(const std::string& name, int64_t guaranteed_gpus,
                                     std::optional<int64_t> max_gpus) {
  Json body{{"guaranteed_gpus", guaranteed_gpus},
            {"max_gpus", max_gpus ? Json(*max_gpus) : Json(nullptr)}};
  return Call("PUT", "/api/v1/teams/" + name, body.dump());
}

Status CohortClient::DeleteTeam(const std::string& name) {
  return Call("DELETE", "/api/v1/teams/" + name).status();
}

StatusOr<Json> CohortClient::Artifacts(JobId id, const std::string& after, size_t limit) {
  return Call("GET", fmt::format("/api/v1/jobs/{}/artifacts", id) +
                         QueryString({{"after", after}, {"limit", std::to_string(limit)}}));
}

StatusOr<std::string> CohortClient::ArtifactRange(JobId id, const std::string& path, int64_t offset,
                                                  int64_t length) {
  // The path's '/' stay separators; everything else that a URL path cannot hold is encoded.
  const std::string target =
      fmt::format("/api/v1/jobs/{}/artifacts/{}", id, PercentEncode(path, "/"));
  COHORT_ASSIGN_OR_RETURN(
      HttpResult r,
      http_->Request("GET", target, {}, "application/json", std::chrono::minutes(2),
                     {{"Range", fmt::format("bytes={}-{}", offset, offset + length - 1)}}));
  if (r.status == 416) return std::string();  // from the end on: nothing
  if (r.status / 100 != 2) return StatusFromErrorBody(r.status, r.body);
  // 200: the whole object, from byte 0 (a server that ignores Range).
  if (r.status == 200) r.body.erase(0, std::min<size_t>(r.body.size(), offset));
  if (r.body.size() > static_cast<size_t>(length)) r.body.resize(static_cast<size_t>(length));
  return std::move(r.body);
}

StatusOr<std::vector<std::string>> CohortClient::MissingBlobs(
    const std::vector<std::string>& sha256) {
  COHORT_ASSIGN_OR_RETURN(Json answer,
                          Call("POST", "/api/v1/blobs/missing", Json{{"sha256", sha256}}.dump()));
  std::vector<std::string> missing;
  const Json* list =
      answer.is_object() && answer.contains("missing") ? &answer["missing"] : nullptr;
  if (!list || !list->is_array()) {
    return Status::Internal("the master's answer to /api/v1/blobs/missing has no list \"missing\"");
  }
  for (const Json& sha : *list) {
    if (!sha.is_string()) return Status::Internal("a missing blob that is not a hash");
    missing.push_back(sha.get<std::string>());
  }
  return missing;
}

StatusOr<Json> CohortClient::PutBlob(const std::string& sha256, std::string_view bytes) {
  // 8 MiB on a slow link takes a while: longer than a JSON call's 30 s.
  return Call("PUT", "/api/v1/blobs/" + sha256, bytes, "application/octet-stream",
              std::chrono::minutes(5));
}

StatusOr<Json> CohortClient::CommitDataset(const std::string& name, const std::string& team,
                                           const Json& request) {
  // Every chunk is checked in the store before the answer: many on S3 take a while.
  return Call(
      "POST",
      "/api/v1/datasets/" + PercentEncode(name) + "/versions" + QueryString({{"team", team}}),
      request.dump(), "application/json", std::chrono::minutes(10));
}

StatusOr<Json> CohortClient::CommitContext(const Json& files) {
  return Call("POST", "/api/v1/contexts", Json{{"files", files}}.dump(), "application/json",
              std::chrono::minutes(10));
}

StatusOr<Json> CohortClient::Datasets(const Query& query) {
  return Call("GET", "/api/v1/datasets" + QueryString(query));
}

StatusOr<Json> CohortClient::Dataset(const std::string& name, const std::string& team) {
  return Call("GET", "/api/v1/datasets/" + PercentEncode(name) + QueryString({{"team", team}}));
}

StatusOr<Json> CohortClient::DatasetVersion(const std::string& name, int64_t version,
                                            const std::string& team, bool files) {
  return Call("GET",
              fmt::format("/api/v1/datasets/{}/versions/{}", PercentEncode(name), version) +
                  QueryString({{"team", team}, {"files", files ? "true" : ""}}),
              {}, "application/json", std::chrono::minutes(2));
}

StatusOr<Json> CohortClient::DeleteDatasetVersion(const std::string& name, int64_t version,
                                                  const std::string& team) {
  return Call("DELETE",
              fmt::format("/api/v1/datasets/{}/versions/{}", PercentEncode(name), version) +
                  QueryString({{"team", team}}));
}

StatusOr<Json> CohortClient::Usage(const Query& query) {
  return Call("GET", "/api/v1/usage" + QueryString(query));
}

StatusOr<Json> CohortClient::JobMetrics(JobId id, const Query& query) {
  return Call("GET", fmt::format("/api/v1/jobs/{}/metrics", id) + QueryString(query));
}

StatusOr<Json> CohortClient::Audit(const Query& query) {
  return Call("GET", "/api/v1/audit" + QueryString(query));
}

StatusOr<DesiredState> CohortClient::Register(const NodeInfo& info, std::string* credential) {
  COHORT_ASSIGN_OR_RETURN(Json doc, Call("POST", "/api/v1/agents/register", ToJson(info).dump()));
  if (!doc.is_object() || !doc.contains("desired")) {
    return Status::Internal("the master's answer to a registration has no \"desired\"");
  }
  if (auto it = doc.find("credential"); credential && it != doc.end() && it->is_string()) {
    *credential = it->get<std::string>();
  }
  return DesiredStateFromJson(doc.at("desired"));
}

StatusOr<DesiredState> CohortClient::Sync(const std::string& node_id, const AgentReport& report,
                                          uint64_t wait_version, Duration wait) {
  int64_t ms = ToMillis(wait);
  COHORT_ASSIGN_OR_RETURN(
      Json doc,
      Call("POST",
           fmt::format("/api/v1/agents/{}/sync?wait_version={}&timeout_ms={}", node_id,
                       wait_version, ms),
           ToJson(report).dump(), "application/json", std::chrono::milliseconds(ms + 10'000)));
  return DesiredStateFromJson(doc);
}

StatusOr<LogUploadResult> CohortClient::ShipLog(const std::string& node_id, const TaskId& task,
                                                const LogUpload& upload, int64_t* resume_at) {
  std::string target =
      fmt::format("/api/v1/agents/{}/logs/{}?offset={}", node_id, task.ToString(), upload.offset);
  if (upload.skip) target += "&skip=true";
  if (upload.end) target += fmt::format("&end={}", *upload.end);
  COHORT_ASSIGN_OR_RETURN(HttpResult r,
                          http_->Request("POST", target, upload.data, "application/octet-stream"));
  if (r.status / 100 == 2) {
    auto doc = ParseJson(r.body);
    if (!doc.ok() || !doc->contains("size") || !(*doc)["size"].is_number_integer()) {
      return Status::Internal("log upload answer has no size");
    }
    LogUploadResult result;
    result.size = (*doc)["size"].get<int64_t>();
    if (doc->contains("limit") && (*doc)["limit"].is_number_integer()) {
      result.limit = (*doc)["limit"].get<int64_t>();
    }
    return result;
  }
  Status s = StatusFromErrorBody(r.status, r.body);
  if (r.status == 409 && resume_at) {
    auto doc = ParseJson(r.body);
    if (doc.ok() && doc->contains("size")) *resume_at = (*doc)["size"].get<int64_t>();
  }
  return s;
}

StatusOr<MetricUploadResult> CohortClient::ShipMetrics(const std::string& node_id,
                                                       const TaskId& task,
                                                       const std::vector<TaggedPoint>& points) {
  COHORT_ASSIGN_OR_RETURN(
      Json answer,
      Call("POST", fmt::format("/api/v1/agents/{}/metrics/{}", node_id, task.ToString()),
           MetricBatchToJson(points)));
  MetricUploadResult result;
  if (answer.contains("stored") && answer["stored"].is_number_integer()) {
    result.stored = answer["stored"].get<int64_t>();
  }
  if (answer.contains("dropped") && answer["dropped"].is_number_integer()) {
    result.dropped = answer["dropped"].get<int64_t>();
  }
  if (answer.contains("why_dropped") && answer["why_dropped"].is_string()) {
    result.why_dropped = answer["why_dropped"].get<std::string>();
  }
  return result;
}

}  // namespace cohort::client
