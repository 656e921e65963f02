#include "api/log_stream.h"

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <boost/asio/post.hpp>

namespace cohort::api {
namespace {

// What one step reads from the store and writes as one chunk, about: bounds the memory a
// follower takes and the time a step holds the event loop.
constexpr size_t kStepBytes = 1 << 20;
// One read from the store; a step stops reading once its chunk holds kStepBytes, so a chunk
// is at most this much over (times the prefixes, for short prefixed lines).
constexpr size_t kReadPiece = 64 * 1024;

}  // namespace

bool FollowerCount::TryAdd(JobId job) {
  int& n = counts_[job];
  if (n >= max_per_job_) return false;
  ++n;
  return true;
}

void FollowerCount::Remove(JobId job) {
  auto it = counts_.find(job);
  if (it == counts_.end()) return;
  if (--it->second <= 0) counts_.erase(it);
}

LogStream::LogStream(boost::asio::io_context& ioc, master::Master& master,
                     Subscribers<JobId>& job_changes, Options options,
                     std::shared_ptr<Responder> responder, FollowerCount* followers)
    : ioc_(ioc),
      master_(master),
      job_changes_(job_changes),
      options_(std::move(options)),
      responder_(std::move(responder)),
      followers_(followers),
      late_timer_(ioc) {}

void LogStream::Start() {
  responder_->StartStream(200, "text/plain; charset=utf-8");
  if (options_.follow) {
    // The callbacks hold the stream: they are what keeps a waiting follower alive.
    auto self = shared_from_this();
    log_subscription_ = master_.logs().Subscribe(options_.job, [self] { self->Wake(); });
    job_subscription_ = job_changes_.Subscribe(options_.job, [self] { self->Wake(); });
  }
  // A client that goes away ends the stream at once, not at the next write.
  responder_->OnClose([weak = weak_from_this()] {
    if (auto self = weak.lock()) self->Finish();
  });
  busy_ = true;
  Step();
}

void LogStream::Wake() {
  woken_ = true;
  if (busy_ || finished_) return;
  busy_ = true;
  Post();
}

void LogStream::Post() {
  boost::asio::post(ioc_, [self = shared_from_this()] { self->Step(); });
}

void LogStream::Step() {
  woken_ = false;
  if (finished_) return;
  if (responder_->closed()) return Finish();
  auto job_or = master_.GetJob(options_.job);
  if (!job_or.ok()) {
    responder_->EndStream();
    return Finish();
  }
  const Job& job = **job_or;
  int attempt = options_.attempt.value_or(job.attempt);
  std::string out;
  bool more = false;
  Status read = ReadNew(job, out, more);
  if (read.ok() && !more && attempt != attempt_ && (Settled() || GiveUpWaiting(out))) {
    // Every line of the attempt that ended is out now (agents ship a task's output before they
    // report its end, or announce how much is still to come): on to the next one.
    Flush(out);
    if (attempt_ != 0 && !options_.attempt) out += fmt::format("--- attempt {} ---\n", attempt);
    attempt_ = attempt;
    files_.clear();
    next_file_ = 0;
    read = ReadNew(job, out, more);
  }
  bool attempt_over = options_.attempt ? (*options_.attempt < job.attempt || IsTerminal(job.state))
                                       : IsTerminal(job.state);
  bool done = !more && (!options_.follow || (attempt_over && (Settled() || GiveUpWaiting(out))));
  if (!read.ok()) {
    // The header is out, so the status cannot say it: the reader sees it in the text.
    spdlog::error("streaming the logs of job {}: {}", options_.job, read.ToString());
    done = true;
    Flush(out);
    out += fmt::format("--- the logs cannot be read: {} ---\n", read.message());
  }
  if (done) Flush(out);
  auto next = [self = shared_from_this(), done, more](bool ok) {
    if (!ok) return self->Finish();
    if (done) {
      self->responder_->EndStream();
      return self->Finish();
    }
    if (more || self->woken_) return self->Post();
    self->busy_ = false;  // until the next wake-up
  };
  if (out.empty()) return next(true);
  responder_->WriteChunk(std::move(out), next);
}

void LogStream::Finish() {
  if (finished_) return;
  finished_ = true;
  late_timer_.cancel();
  if (log_subscription_) master_.logs().Unsubscribe(*log_subscription_);
  if (job_subscription_) job_changes_.Unsubscribe(*job_subscription_);
  if (followers_) followers_->Remove(options_.job);
}

Status LogStream::ReadNew(const Job& job, std::string& out, bool& more) {
  COHORT_RETURN_IF_ERROR(RefreshFiles(job));
  size_t n = files_.size();
  for (size_t i = 0; i < n && out.size() < kStepBytes; ++i) {
    COHORT_RETURN_IF_ERROR(Read(files_[(next_file_ + i) % n], out));
  }
  if (n > 0) next_file_ = (next_file_ + 1) % n;
  more = std::any_of(files_.begin(), files_.end(), [](const File& f) { return f.offset < f.size; });
  return Status::Ok();
}

Status LogStream::RefreshFiles(const Job& job) {
  if (attempt_ <= 0) return Status::Ok();
  std::vector<TaskId> tasks;
  if (attempt_ == job.attempt && !job.tasks.empty()) {
    for (const auto& t : job.tasks) tasks.push_back(job.IdOf(t));
  } else {
    // An earlier attempt, or this one after it ended and the job went back to the queue.
    COHORT_ASSIGN_OR_RETURN(tasks, master_.logs().TasksWithLogs(job.id, attempt_));
  }
  if (options_.task) {
    std::erase_if(tasks, [&](const TaskId& t) {
      return t.role != options_.task->first || t.index != options_.task->second;
    });
  }
  bool prefix = tasks.size() > 1;
  for (const TaskId& task : tasks) {
    bool known =
        std::any_of(files_.begin(), files_.end(), [&](const File& f) { return f.task == task; });
    if (!known) {
      files_.push_back(
          File{task, LineSplitter(prefix ? fmt::format("[{}/{}] ", task.role, task.index) : ""), 0,
               0, std::nullopt, false});
      if (options_.tail && !tail_done_) {
        COHORT_ASSIGN_OR_RETURN(master::LogInfo info, master_.logs().Info(task));
        if (info.size > *options_.tail) {
          files_.back().offset = info.size - *options_.tail;
          files_.back().skip_to_line = true;
        }
      }
    }
  }
  // Files that appear later (tasks that start later, a later attempt) are read whole.
  if (!files_.empty()) tail_done_ = true;
  return Status::Ok();
}

Status LogStream::Read(File& f, std::string& out) {
  const master::LogStore& logs = master_.logs();
  COHORT_ASSIGN_OR_RETURN(master::LogInfo info, logs.Info(f.task));
  f.size = info.size;
  f.end = info.end;
  while (f.offset < f.size && out.size() < kStepBytes) {
    COHORT_ASSIGN_OR_RETURN(master::LogChunk chunk, logs.Read(f.task, f.offset, kReadPiece));
    if (chunk.dropped > 0) {
      f.lines.Note(master::DroppedMarker(chunk.dropped, logs.limits().per_task), out);
    }
    std::string_view data = chunk.data;
    if (f.skip_to_line) {
      size_t newline = data.find('\n');
      const int64_t skipped =
          f.offset +
          static_cast<int64_t>(newline == std::string_view::npos ? data.size() : newline + 1);
      data = newline == std::string_view::npos ? std::string_view() : data.substr(newline + 1);
      if (newline != std::string_view::npos) {
        f.skip_to_line = false;
        f.lines.Note(fmt::format("[cohort: {} earlier bytes not shown; ask without tail= for them]",
                                 skipped),
                     out);
      }
    }
    f.lines.Feed(data, out);
    if (chunk.next == f.offset) {
      f.size = f.offset;  // a segment shorter than the store thought: wait for more
      break;
    }
    f.offset = chunk.next;
    waiting_since_.reset();
  }
  return Status::Ok();
}

bool LogStream::Settled() const {
  return std::all_of(files_.begin(), files_.end(), [](const File& f) { return f.settled(); });
}

bool LogStream::GiveUpWaiting(std::string& out) {
  auto now = std::chrono::steady_clock::now();
  if (!waiting_since_) waiting_since_ = now;
  auto deadline = *waiting_since_ + options_.late_output_wait;
  if (now >= deadline) {
    for (auto& f : files_) {
      if (f.settled()) continue;
      spdlog::warn("job {}: {} announced {} bytes of output; {} arrived", options_.job,
                   f.task.ToString(), *f.end, f.offset);
      f.lines.Note("[cohort: the rest of this task's output did not arrive]", out);
      f.gave_up = true;
    }
    return true;
  }
  if (!late_timer_armed_) {
    late_timer_armed_ = true;
    late_timer_.expires_at(deadline);
    late_timer_.async_wait([self = shared_from_this()](const boost::system::error_code& ec) {
      self->late_timer_armed_ = false;
      if (!ec) self->Wake();
    });
  }
  return false;
}

void LogStream::Flush(std::string& out) {
  for (auto& f : files_) f.lines.Flush(out);
}

}  // namespace cohort::api
