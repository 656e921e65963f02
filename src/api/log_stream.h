// One answer to GET /api/v1/jobs/{id}/logs: the logs of a job's tasks as a chunked text/plain
// body (docs/api.md, "Logs").
//
// It sends whole lines only (a final line without its newline goes out at the end), each line
// prefixed with its task ("[worker/1] ") when there are several tasks, and reads at most a fixed
// budget per task before it writes, so that a huge log never sits in memory at once. When
// following, it waits without polling: the log store wakes it when an agent ships bytes, and
// the API wakes it when the job changes (a new attempt, "--- attempt N ---", or the end). It
// ends once the job (or the attempt asked for) has ended and every byte is out.
//
// Runs on the master's event-loop thread. A follower keeps itself alive through its
// subscriptions until it ends or finds its client gone.
#pragma once

#include <boost/asio/io_context.hpp>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "api/http_server.h"
#include "common/subscribers.h"
#include "master/master.h"

namespace cohort::api {

class LogStream : public std::enable_shared_from_this<LogStream> {
 public:
  struct Options {
    JobId job = 0;
    // Unset: the current attempt, moving on to the next one when the job is retried.
    std::optional<int> attempt;
    // Unset: every task of the attempt.
    std::optional<std::pair<std::string, int>> task;  // role, index
    bool follow = false;
  };

  // `job_changes` must be notified with the job's id whenever it changes; it and `master` must
  // outlive the stream's subscriptions (they do: both are owned above the API's connections).
  LogStream(boost::asio::io_context& ioc, master::Master& master, Subscribers<JobId>& job_changes,
            Options options, std::shared_ptr<Responder> responder);

  // Sends the response header and starts streaming.
  void Start();

 private:
  struct File {
    TaskId task;
    std::string prefix;
    int64_t offset = 0;
    std::string partial;  // a line without its newline yet
  };

  // Something may have changed: step now, or right after the step under way.
  void Wake();
  void Post();
  void Step();
  void Finish();
  // Refreshes the files, then appends the whole new lines of each to `out`; `more` is set if
  // some file has more than the read budget allowed.
  Status ReadNewLines(const Job& job, std::string& out, bool& more);
  // The logs of the attempt being streamed, in rank order for the current attempt.
  Status RefreshFiles(const Job& job);
  // Appends the whole new lines of `f` to `out`; true if the read budget ran out first.
  StatusOr<bool> Read(File& f, std::string& out);
  // Appends every partial line, newline added.
  void Flush(std::string& out);

  boost::asio::io_context& ioc_;
  master::Master& master_;
  Subscribers<JobId>& job_changes_;
  Options options_;
  std::shared_ptr<Responder> responder_;
  int attempt_ = 0;
  std::vector<File> files_;
  bool busy_ = false;   // a step is posted, or its chunk is being written
  bool woken_ = false;  // a wake-up came during the step under way
  bool finished_ = false;
  std::optional<master::LogStore::SubscriptionId> log_subscription_;
  std::optional<Subscribers<JobId>::Id> job_subscription_;
};

}  // namespace cohort::api
