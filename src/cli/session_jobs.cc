#include "cli/session_jobs.h"

#include <fmt/format.h>

#include <cstdlib>

#include "os/process.h"

namespace cohort::cli {

void AddSessionOptions(CLI::App* cmd, SessionOptions& o) {
  cmd->add_option("--gpus", o.gpus, "GPUs")->check(CLI::Range(0, 1024))->capture_default_str();
  cmd->add_option("--cpus", o.cpus, "CPUs, e.g. 4 or 0.5 (default 1)");
  cmd->add_option("--memory", o.memory, "Memory, e.g. 16Gi (default 1Gi)");
  cmd->add_option("--image", o.image,
                  fmt::format("Run the {} in this container image (a registry the cluster pulls "
                              "from)",
                              o.kind));
  cmd->add_option("--team", o.team, "Team (default: your team)");
  cmd->add_option("--name", o.name, "The session's job name")->capture_default_str();
  cmd->add_option("--idle-timeout", o.idle_timeout,
                  "End the session after its GPUs have been idle with no input this long, e.g. "
                  "20m (default and longest: the cluster's, 30m unless an admin set another)");
}

Json SessionSpec(const SessionOptions& o) {
  Json resources{{"gpus", o.gpus}};
  if (!o.cpus.empty()) resources["cpus"] = o.cpus;
  if (!o.memory.empty()) resources["memory"] = o.memory;
  Json group{{"role", o.kind}, {"resources", resources}};
  if (!o.image.empty()) group["image"] = o.image;
  Json session{{"kind", o.kind}};
  if (!o.idle_timeout.empty()) session["idle_timeout"] = o.idle_timeout;
  // A session is not started again: a new one would have lost the old one's state anyway.
  Json spec{{"name", o.name},
            {"tasks", Json::array({group})},
            {"session", session},
            {"restart", Json{{"on", Json::array()}}}};
  if (!o.team.empty()) spec["team"] = o.team;
  return spec;
}

StatusOr<Job> RunningSession(client::CohortClient& c, const std::string& existing,
                             const SessionOptions& o) {
  JobId id = 0;
  if (!existing.empty()) {
    COHORT_ASSIGN_OR_RETURN(id, ResolveJob(c, existing));
  } else {
    COHORT_ASSIGN_OR_RETURN(Job submitted, c.Submit(SessionSpec(o).dump()));
    id = submitted.id;
    fmt::print(stderr, "{} {} submitted (cohort status {}; cohort kill {} ends it)\n",
               o.kind == "shell" ? "session" : o.kind, id, id, id);
  }
  Progress progress;
  COHORT_ASSIGN_OR_RETURN(Job job, c.GetJob(id));
  while (job.state != JobState::kRunning) {
    if (IsTerminal(job.state)) {
      progress.Done();
      return Status::FailedPrecondition(
          fmt::format("session {} ended ({}): {}", id, JobStateName(job.state), job.message));
    }
    progress.Update(fmt::format("session {} {}: {}", id, JobStateName(job.state), job.message));
    COHORT_ASSIGN_OR_RETURN(job, c.WaitJob(id, job.version, std::chrono::seconds(30)));
  }
  progress.Done();
  return job;
}

bool HasDesktop() {
  for (const char* name : {"DISPLAY", "WAYLAND_DISPLAY"}) {
    const char* value = std::getenv(name);
    if (value && *value) return true;
  }
  return false;
}

bool OpenInBrowser(const std::string& url) {
  auto xdg_open = FindOnPath("xdg-open");
  if (!xdg_open) return false;
  return Spawn({*xdg_open, url}, SpawnOptions{"/dev/null", true, {}}).ok();
}

}  // namespace cohort::cli
