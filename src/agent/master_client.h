// The agent's side of the agent-master protocol (model/agent_protocol.h): the three calls it
// makes, behind an interface, so that the agent's reconciliation can be tested against a fake
// master. HttpMasterClient makes them over HTTP with client::CohortClient.
#pragma once

#include <cstdint>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "client/cohort_client.h"
#include "common/status.h"
#include "common/time.h"
#include "model/agent_protocol.h"
#include "model/node.h"

namespace cohort::agent {

// Thread-safe: the agent long-polls on one thread while it ships logs and reports exits on
// another, and a call waiting on one thread must not hold up the other.
class MasterClient {
 public:
  virtual ~MasterClient() = default;

  // Registers (or re-registers) the node; returns what should run on it. kInvalidArgument: the
  // master refuses this node (retrying the same `info` will not help); kUnavailable or
  // kDeadlineExceeded: the master cannot be reached.
  virtual StatusOr<DesiredState> Register(const NodeInfo& info) = 0;

  // Reports what runs on the node; returns what should. If the master's desired state for the
  // node is not newer than `wait_version`, the answer may wait up to `wait` for it to change
  // (a long poll; zero answers at once). kNotFound: the master does not know the node (it
  // restarted, or forgot the node): register again.
  virtual StatusOr<DesiredState> Sync(const std::string& node_id, const AgentReport& report,
                                      uint64_t wait_version, Duration wait) = 0;

  // Appends the upload's bytes to the master's copy of the task's output, which must hold at
  // least `upload.offset` bytes unless `upload.skip`; returns the size it holds afterwards and
  // its log limit. On an offset mismatch, kFailedPrecondition with the master's size in
  // `*resume_at` (untouched otherwise). kNotFound: the master has no such task (its job is
  // gone), so the output has nowhere to go.
  virtual StatusOr<LogUploadResult> ShipLog(const std::string& node_id, const TaskId& task,
                                            const LogUpload& upload, int64_t* resume_at) = 0;

  // Stores a batch of the task's metric points (finite values, at most kMaxMetricBatchPoints).
  // kNotFound: the master has no such task; kUnavailable: it is behind, send them again later.
  virtual StatusOr<MetricUploadResult> ShipMetrics(const std::string& node_id, const TaskId& task,
                                                   const std::vector<TaggedPoint>& points) = 0;

  // Makes the calls in progress on other threads (a long poll, above all) return at once with
  // kUnavailable. Calls that start afterwards are not affected, so a caller that wants a thread
  // to give up calls this until that thread has noticed.
  virtual void CancelCalls() = 0;
};

// How the agent proves to the master which node it is (docs/security.md, "Agents").
struct AgentCredentials {
  std::string join_token;  // the cluster's join token; empty: the agent can only use its credential
  // Where the node's credential is kept (0600); the master hands it out when the agent
  // registers with the join token.
  std::string credential_path;
};

// The master's HTTP API. Each call in flight gets its own connection (an HTTP client serves one
// thread); connections are kept alive for the next calls.
//
// Calls carry the node's credential. Registering without one, or with one the master no longer
// takes (the node was removed, the master's database is new), uses the join token and keeps the
// credential the master answers with. A sync or log upload the master refuses for its
// credential returns kNotFound, so that the agent registers again.
class HttpMasterClient final : public MasterClient {
 public:
  // kInvalidArgument if `master_url` is not http(s)://HOST:PORT, or `tls` names a CA file that
  // cannot be used.
  static StatusOr<std::unique_ptr<HttpMasterClient>> Create(std::string master_url,
                                                            AgentCredentials credentials = {},
                                                            client::TlsOptions tls = {});

  StatusOr<DesiredState> Register(const NodeInfo& info) override;
  StatusOr<DesiredState> Sync(const std::string& node_id, const AgentReport& report,
                              uint64_t wait_version, Duration wait) override;
  StatusOr<MetricUploadResult> ShipMetrics(const std::string& node_id, const TaskId& task,
                                           const std::vector<TaggedPoint>& points) override;
  StatusOr<LogUploadResult> ShipLog(const std::string& node_id, const TaskId& task,
                                    const LogUpload& upload, int64_t* resume_at) override;
  void CancelCalls() override;

 private:
  HttpMasterClient(std::string master_url, AgentCredentials credentials, client::TlsOptions tls);
  // A client carrying the current credential, or `token` when given.
  std::unique_ptr<client::CohortClient> Acquire(const std::string* token = nullptr);
  void Release(std::unique_ptr<client::CohortClient> client);
  std::string Credential();
  Status KeepCredential(const std::string& credential);

  const std::string master_url_;
  const AgentCredentials credentials_;
  const client::TlsOptions tls_;
  std::mutex mu_;
  std::string credential_;                                   // guarded by mu_
  std::vector<std::unique_ptr<client::CohortClient>> idle_;  // guarded by mu_
  std::set<client::CohortClient*> busy_;                     // guarded by mu_
};

}  // namespace cohort::agent
