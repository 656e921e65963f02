#include "api/log_stream.h"

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <boost/asio/post.hpp>

namespace cohort::api {
namespace {

// Per task and step: bounds the memory a step takes, and lets other requests in between.
constexpr size_t kLogReadBudget = 256 * 1024;

}  // namespace

LogStream::LogStream(boost::asio::io_context& ioc, master::Master& master,
                     Subscribers<JobId>& job_changes, Options options,
                     std::shared_ptr<Responder> responder)
    : ioc_(ioc),
      master_(master),
      job_changes_(job_changes),
      options_(std::move(options)),
      responder_(std::move(responder)) {}

void LogStream::Start() {
  responder_->StartStream(200, "text/plain; charset=utf-8");
  if (options_.follow) {
    // The callbacks hold the stream: they are what keeps a waiting follower alive.
    auto self = shared_from_this();
    log_subscription_ = master_.logs().Subscribe(options_.job, [self] { self->Wake(); });
    job_subscription_ = job_changes_.Subscribe(options_.job, [self] { self->Wake(); });
  }
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
  Status read = ReadNewLines(job, out, more);
  if (read.ok() && !more && attempt != attempt_) {
    // Every line of the attempt that ended is out now (agents ship the whole output of a task
    // before they report its end): on to the next one.
    Flush(out);
    if (attempt_ != 0 && !options_.attempt) out += fmt::format("--- attempt {} ---\n", attempt);
    attempt_ = attempt;
    files_.clear();
    read = ReadNewLines(job, out, more);
  }
  bool attempt_over = options_.attempt ? (*options_.attempt < job.attempt || IsTerminal(job.state))
                                       : IsTerminal(job.state);
  bool done = !more && (!options_.follow || attempt_over);
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
  if (log_subscription_) master_.logs().Unsubscribe(*log_subscription_);
  if (job_subscription_) job_changes_.Unsubscribe(*job_subscription_);
}

Status LogStream::ReadNewLines(const Job& job, std::string& out, bool& more) {
  COHORT_RETURN_IF_ERROR(RefreshFiles(job));
  for (auto& f : files_) {
    COHORT_ASSIGN_OR_RETURN(bool budget_ran_out, Read(f, out));
    more |= budget_ran_out;
  }
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
          File{task, prefix ? fmt::format("[{}/{}] ", task.role, task.index) : "", 0, ""});
    }
  }
  return Status::Ok();
}

StatusOr<bool> LogStream::Read(File& f, std::string& out) {
  COHORT_ASSIGN_OR_RETURN(std::string data, master_.logs().Read(f.task, f.offset, kLogReadBudget));
  f.offset += static_cast<int64_t>(data.size());
  f.partial += data;
  size_t start = 0;
  size_t nl;
  while ((nl = f.partial.find('\n', start)) != std::string::npos) {
    out += f.prefix;
    out.append(f.partial, start, nl - start + 1);
    start = nl + 1;
  }
  f.partial.erase(0, start);
  return data.size() == kLogReadBudget;
}

void LogStream::Flush(std::string& out) {
  for (auto& f : files_) {
    if (f.partial.empty()) continue;
    out += f.prefix + f.partial + "\n";
    f.partial.clear();
  }
}

}  // namespace cohort::api
