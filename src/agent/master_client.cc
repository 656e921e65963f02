#include "agent/master_client.h"

namespace cohort::agent {

StatusOr<std::unique_ptr<HttpMasterClient>> HttpMasterClient::Create(std::string master_url,
                                                                     client::TlsOptions tls) {
  // Checks the URL and loads the CA file once, so that later connections cannot fail on them.
  COHORT_ASSIGN_OR_RETURN(tls, client::LoadTls(master_url, std::move(tls)));
  COHORT_ASSIGN_OR_RETURN(auto first, client::CohortClient::Create(master_url, tls));
  auto self = std::unique_ptr<HttpMasterClient>(
      new HttpMasterClient(std::move(master_url), std::move(tls)));
  self->idle_.push_back(std::move(first));
  return self;
}

std::unique_ptr<client::CohortClient> HttpMasterClient::Acquire() {
  std::unique_ptr<client::CohortClient> client;
  std::lock_guard lock(mu_);
  if (!idle_.empty()) {
    client = std::move(idle_.back());
    idle_.pop_back();
  } else {
    auto created = client::CohortClient::Create(master_url_, tls_);
    COHORT_CHECK(created.ok());  // the URL and CA file were checked by Create
    client = std::move(created).value();
  }
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
  auto client = Acquire();
  auto desired = client->Register(info);
  Release(std::move(client));
  return desired;
}

StatusOr<DesiredState> HttpMasterClient::Sync(const std::string& node_id, const AgentReport& report,
                                              uint64_t wait_version, Duration wait) {
  auto client = Acquire();
  auto desired = client->Sync(node_id, report, wait_version, wait);
  Release(std::move(client));
  return desired;
}

StatusOr<LogUploadResult> HttpMasterClient::ShipLog(const std::string& node_id, const TaskId& task,
                                                    const LogUpload& upload, int64_t* resume_at) {
  auto client = Acquire();
  auto size = client->ShipLog(node_id, task, upload, resume_at);
  Release(std::move(client));
  return size;
}

}  // namespace cohort::agent
