// One answer to GET /api/v1/jobs/{id}/logs: the logs of a job's tasks as a chunked text/plain
// body (docs/api.md, "Logs").
//
// It sends lines (api/line_splitter.h: a final line without its newline goes out at the end, a
// line longer than 64 KiB in pieces), each prefixed with its task ("[worker/1] ") when there
// are several tasks. Where the master dropped output (the log limit), a marker line says how
// much. Work is bounded per step: it reads at most about 1 MiB before it writes, and reads
// again only once the client has taken that chunk, so a slow reader holds one chunk, not the
// log, and a huge log never holds up the event loop. When following, it waits without polling:
// the log store wakes it when an agent ships bytes, and the API wakes it when the job changes
// (a new attempt, "--- attempt N ---", or the end). It ends once the job (or the attempt asked
// for) has ended and every byte is out, including output that an agent announced with the
// task's end and ships afterwards (given up after a while if it never comes).
//
// Runs on the master's event-loop thread. A follower keeps itself alive through its
// subscriptions until it ends or its client goes away, which it learns at once (the responder
// watches the connection), even while the job is silent.
#pragma once

#include <boost/asio/io_context.hpp>
#include <boost/asio/steady_timer.hpp>
#include <chrono>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "api/http_server.h"
#include "api/line_splitter.h"
#include "common/subscribers.h"
#include "master/master.h"

namespace cohort::api {

// How many streams follow each job, so that their number can be bounded.
class FollowerCount {
 public:
  explicit FollowerCount(int max_per_job) : max_per_job_(max_per_job) {}
  // False if the job already has the most followers allowed.
  bool TryAdd(JobId job);
  void Remove(JobId job);
  int max_per_job() const { return max_per_job_; }

 private:
  int max_per_job_;
  std::map<JobId, int> counts_;
};

class LogStream : public std::enable_shared_from_this<LogStream> {
 public:
  struct Options {
    JobId job = 0;
    // Unset: the current attempt, moving on to the next one when the job is retried.
    std::optional<int> attempt;
    // Unset: every task of the attempt.
    std::optional<std::pair<std::string, int>> task;  // role, index
    bool follow = false;
    // Only about the last `tail` bytes of each task's log of the first attempt streamed, from
    // the first whole line in them, after a line saying how much came before: how a page shows
    // a long log without loading it whole. Unset: from the start.
    std::optional<int64_t> tail = {};
    // How long a follower waits, after the job ended, for output its agent announced.
    std::chrono::milliseconds late_output_wait = std::chrono::seconds(30);
  };

  // `job_changes` must be notified with the job's id whenever it changes; it and `master` must
  // outlive the stream's subscriptions (they do: both are owned above the API's connections).
  // `followers`, if set, has counted this stream already; it is told when the stream ends.
  LogStream(boost::asio::io_context& ioc, master::Master& master, Subscribers<JobId>& job_changes,
            Options options, std::shared_ptr<Responder> responder,
            FollowerCount* followers = nullptr);

  // Sends the response header and starts streaming.
  void Start();

 private:
  struct File {
    TaskId task;
    LineSplitter lines;
    int64_t offset = 0;
    int64_t size = 0;            // the log's size when last read
    std::optional<int64_t> end;  // the task's whole output, once its agent said
    bool gave_up = false;        // waited long enough for the rest of it
    bool skip_to_line = false;   // started inside the log (tail): drop the partial first line
    // Read up to what its agent announced (or nothing was announced).
    bool settled() const { return gave_up || !end || offset >= *end; }
  };

  // Something may have changed: step now, or right after the step under way.
  void Wake();
  void Post();
  void Step();
  void Finish();
  // Refreshes the files, then appends what is new in them to `out`, within the step's budget;
  // `more` is set if some file has more than the budget allowed.
  Status ReadNew(const Job& job, std::string& out, bool& more);
  // The logs of the attempt being streamed, in rank order for the current attempt.
  Status RefreshFiles(const Job& job);
  // Appends what is new in `f` to `out` until `out` holds a step's worth.
  Status Read(File& f, std::string& out);
  bool Settled() const;
  // Whether to stop waiting for announced output: nothing came for `late_output_wait` (then a
  // note in `out` says so). Until then, arms the timer that wakes the stream to ask again.
  bool GiveUpWaiting(std::string& out);
  // Appends every line under way, newline added.
  void Flush(std::string& out);

  boost::asio::io_context& ioc_;
  master::Master& master_;
  Subscribers<JobId>& job_changes_;
  Options options_;
  std::shared_ptr<Responder> responder_;
  FollowerCount* followers_;
  int attempt_ = 0;
  std::vector<File> files_;
  bool tail_done_ = false;  // the tail applies to the first attempt's files only
  size_t next_file_ = 0;    // where the next step starts reading, so that no task starves
  bool busy_ = false;       // a step is posted, or its chunk is being written
  bool woken_ = false;      // a wake-up came during the step under way
  bool finished_ = false;
  // Since when the stream has been waiting for announced output without getting any.
  std::optional<std::chrono::steady_clock::time_point> waiting_since_;
  boost::asio::steady_timer late_timer_;
  bool late_timer_armed_ = false;
  std::optional<master::LogStore::SubscriptionId> log_subscription_;
  std::optional<Subscribers<JobId>::Id> job_subscription_;
};

}  // namespace cohort::api
