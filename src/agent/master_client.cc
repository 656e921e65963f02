#include "agent/master_client.h"

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include "common/strings.h"
#include "os/durable_file.h"
#include "os/process.h"

namespace cohort::agent {
namespace {

// The master refuses the credential: to the agent that is a node it does not know.
Status Unknown(Status s) {
  if (s.code() != StatusCode::kUnauthenticated) return s;
  return Status::NotFound("the master does not take this node's credential (" + s.message() +
                          "); registering again");
}

}  // namespace

HttpMasterClient::HttpMasterClient(std::string master_url, AgentCredentials credentials,
                                   client::TlsOptions tls)
    : master_url_(std::move(master_url)),
      credentials_(std::move(credentials)),
      tls_(std::move(tls)) {
  if (!credentials_.credential_path.empty()) {
    credential_ = std::string(Trim(ReadFileOrEmpty(credentials_.credential_path)));
  }
}

StatusOr<std::unique_ptr<HttpMasterClient>> HttpMasterClient::Create(std::string master_url,
                                                                     AgentCredentials credentials,
                                                                     client::TlsOptions tls) {
  // Checks the URL and loads the CA file once, so that later connections cannot fail on them.
  COHORT_ASSIGN_OR_RETURN(tls, client::LoadTls(master_url, std::move(tls)));
  COHORT_ASSIGN_OR_RETURN(auto first, client::CohortClient::Create(master_url, {}, tls));
  auto self = std::unique_ptr<HttpMasterClient>(
      new HttpMasterClient(std::move(master_url), std::move(credentials), std::move(tls)));
  self->idle_.push_back(std::move(first));
  return self;
}

std::string HttpMasterClient::Credential() {
  std::lock_guard lock(mu_);
  return credential_;
}

Status HttpMasterClient::KeepCredential(const std::string& credential) {
  if (!credentials_.credential_path.empty()) {
    Status kept = WriteFileAtomically(credentials_.credential_path, credential + "\n", 0600);
    if (!kept.ok()) {
      return Status(kept.code(), "cannot keep the node's credential: " + kept.message());
    }
  }
  std::lock_guard lock(mu_);
  credential_ = credential;
  return Status::Ok();
}

std::unique_ptr<client::CohortClient> HttpMasterClient::Acquire(const std::string* token) {
  std::unique_ptr<client::CohortClient> client;
  std::lock_guard lock(mu_);
  if (!idle_.empty()) {
    client = std::move(idle_.back());
    idle_.pop_back();
  } else {
    auto created = client::CohortClient::Create(master_url_, {}, tls_);
    COHORT_CHECK(created.ok());  // the URL and CA file were checked by Create
    client = std::move(created).value();
  }
  client->SetToken(token ? *token : credential_);
  busy_.insert(client.get());
  return client;
}

void HttpMasterClient::Release(std::unique_ptr<client::CohortClient> client) {
  std::lock_guard lock(mu_);
  busy_.erase(client.get());
  idle_.push_back(std::move(client));
}

void HttpMasterClient::CancelCalls() {
  std::lock_guard lock(mu_);
  for (client::CohortClient* client : busy_) client->Cancel();
}

StatusOr<DesiredState> HttpMasterClient::Register(const NodeInfo& info) {
  if (!Credential().empty()) {
    auto client = Acquire();
    auto desired = client->Register(info);
    Release(std::move(client));
    if (desired.ok() || desired.status().code() != StatusCode::kUnauthenticated) return desired;
    if (credentials_.join_token.empty()) return desired;
    spdlog::warn("the master refused node {}'s credential ({}); joining again with the join token",
                 info.id, desired.status().message());
  }
  if (credentials_.join_token.empty()) {
    return Status::Unauthenticated(fmt::format(
        "node {} has no credential and no join token: start the agent with --join-token-file "
        "(the master writes the join token to its data directory's join-token file; `cohort "
        "token create --join` makes another)",
        info.id));
  }
  auto client = Acquire(&credentials_.join_token);
  std::string credential;
  auto desired = client->Register(info, &credential);
  Release(std::move(client));
  if (!desired.ok()) return desired;
  if (credential.empty()) {
    return Status::Internal("the master took the join token but sent no credential");
  }
  COHORT_RETURN_IF_ERROR(KeepCredential(credential));
  spdlog::info("node {} joined the cluster; its credential is in {}", info.id,
               credentials_.credential_path);
  return desired;
}

StatusOr<DesiredState> HttpMasterClient::Sync(const std::string& node_id, const AgentReport& report,
                                              uint64_t wait_version, Duration wait) {
  auto client = Acquire();
  auto desired = client->Sync(node_id, report, wait_version, wait);
  Release(std::move(client));
  if (!desired.ok()) return Unknown(desired.status());
  return desired;
}

StatusOr<LogUploadResult> HttpMasterClient::ShipLog(const std::string& node_id, const TaskId& task,
                                                    const LogUpload& upload, int64_t* resume_at) {
  auto client = Acquire();
  auto size = client->ShipLog(node_id, task, upload, resume_at);
  Release(std::move(client));
  if (!size.ok()) return Unknown(size.status());
  return size;
}

StatusOr<MetricUploadResult> HttpMasterClient::ShipMetrics(const std::string& node_id,
                                                           const TaskId& task,
                                                           const std::vector<TaggedPoint>& points) {
  auto client = Acquire();
  auto result = client->ShipMetrics(node_id, task, points);
  Release(std::move(client));
  if (!result.ok()) return Unknown(result.status());
  return result;
}

}  // namespace cohort::agent
