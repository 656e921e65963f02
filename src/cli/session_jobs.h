// What `cohort shell` and `cohort notebook` share (docs/runtimes.md): the session's job spec
// from their options, the options themselves, and the wait until it runs.
#pragma once

#include <CLI/CLI.hpp>
#include <string>

#include "cli/cli.h"

namespace cohort::cli {

struct SessionOptions {
  // A session of `kind`, named after it.
  static SessionOptions Of(std::string kind) {
    SessionOptions o;
    o.kind = kind;
    o.name = std::move(kind);
    return o;
  }
  std::string kind;  // "shell", "notebook"
  int gpus = 1;
  std::string cpus;
  std::string memory;
  std::string image;
  std::string team;
  std::string name;
  std::string idle_timeout;
};

// --gpus, --cpus, --memory, --image, --team, --name, --idle-timeout.
void AddSessionOptions(CLI::App* cmd, SessionOptions& o);
// A job of one task (role = the kind) with a `session` section, never started again.
Json SessionSpec(const SessionOptions& o);
// The session a command works on: the one `existing` names (--attach, --open), else a new one
// submitted as `o` says (said on stderr); then waited for until it runs (what it waits for said
// on stderr). The job once it runs, or an error (one once it has ended).
StatusOr<Job> RunningSession(client::CohortClient& c, const std::string& existing,
                             const SessionOptions& o);

// Whether this process runs on a desktop ($DISPLAY or $WAYLAND_DISPLAY set), and hands `url` to
// xdg-open there, not waiting for the browser: whether it was handed over.
bool HasDesktop();
bool OpenInBrowser(const std::string& url);

}  // namespace cohort::cli
