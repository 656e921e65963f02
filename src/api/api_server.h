// Cohort's HTTP/JSON API, version 1 (docs/api.md): routes requests to the master, answers long
// polls when the master reports a change, and streams task logs.
//
// Runs entirely on the master's io_context thread, like the master itself.
#pragma once

#include <boost/asio/io_context.hpp>
#include <boost/asio/steady_timer.hpp>
#include <map>
#include <memory>
#include <string>

#include "api/http_server.h"
#include "common/subscribers.h"
#include "master/master.h"

namespace cohort::api {

// The one place where a Status becomes an HTTP status.
int HttpStatusFor(StatusCode code);
// {"error": {"code": "not_found", "message": "...", "details": [...]}}
HttpResponse ErrorResponse(const Status& status);

class ApiServer final : public master::MasterListener {
 public:
  ApiServer(boost::asio::io_context& ioc, master::Master& master);
  ~ApiServer() override;

  Status Listen(const std::string& host, int port);
  int port() const { return http_.port(); }
  void Stop();

  void OnJobChanged(JobId id) override;
  void OnNodeChanged(const std::string& node_id) override;

 private:
  struct JobWaiter;
  struct NodeWaiter;

  void Handle(HttpRequest request, std::shared_ptr<Responder> responder);
  void SubmitJob(const HttpRequest& request, Responder& responder);
  void ListJobs(const HttpRequest& request, Responder& responder);
  void GetJob(JobId id, const HttpRequest& request, std::shared_ptr<Responder> responder);
  void StreamLogs(JobId id, const HttpRequest& request, std::shared_ptr<Responder> responder);
  void ListNodes(Responder& responder);
  void ListTeams(Responder& responder);
  void SetTeam(const std::string& name, const HttpRequest& request, Responder& responder);
  void RegisterAgent(const HttpRequest& request, Responder& responder);
  void SyncAgent(const std::string& node_id, const HttpRequest& request,
                 std::shared_ptr<Responder> responder);
  void UploadLog(const std::string& node_id, const std::string& task_key,
                 const HttpRequest& request, Responder& responder);

  void WakeJobWaiters(JobId id);
  void WakeNodeWaiters(const std::string& node_id);
  void ScheduleTick();

  boost::asio::io_context& ioc_;
  master::Master& master_;
  HttpServer http_;
  boost::asio::steady_timer tick_timer_;
  std::multimap<JobId, std::shared_ptr<JobWaiter>> job_waiters_;
  std::multimap<std::string, std::shared_ptr<NodeWaiter>> node_waiters_;
  Subscribers<JobId> job_changes_;  // log streams following a job
  bool stopped_ = false;
};

}  // namespace cohort::api
