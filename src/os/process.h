// Processes, small files and /proc, as the agent, the CLI and the tests handle them. Everything
// here acts on the machine; the pure modules (scheduler, model) cannot link it.
#pragma once

#include <sys/types.h>

#include <map>
#include <optional>
#include <string>
#include <vector>

#include "common/status.h"
#include "os/credentials.h"

namespace cohort {

struct SpawnOptions {
  std::string output;       // stdout and stderr are appended here; empty: inherited
  bool new_session = true;  // setsid(): no controlling terminal, its own process group
  std::map<std::string, std::string> env;  // set on top of this process's environment
  // Runs it as this account (DropPrivileges, before the output is opened); needs root. A child
  // that cannot become it exits with 126.
  std::optional<Owner> as = {};
  // Runs it at this nice value or lower priority (os/priority.h), from before its exec.
  int nice = 0;
};

// This process's environment with `overlay` on top, as "NAME=value" strings, sorted.
std::vector<std::string> EnvironmentWith(const std::map<std::string, std::string>& overlay);

// Starts `argv` (argv[0] is a path, not searched) as a child, with stdin from /dev/null and the
// signal mask cleared. A signal sent to the child at once reaches it with the default action (or
// the new program's), never a handler of this process. Safe to call from a multi-threaded
// process: everything the child needs is prepared before fork, and the child only makes
// async-signal-safe calls.
StatusOr<pid_t> Spawn(const std::vector<std::string>& argv, const SpawnOptions& options = {});

// Runs `argv` to completion; returns its exit status (128 + signal if it was killed).
int RunToCompletion(const std::vector<std::string>& argv, const SpawnOptions& options = {});

// The whole file, or "" if it cannot be read.
std::string ReadFileOrEmpty(const std::string& path);
// The pid a pid file holds (decimal, an optional newline), or 0 if it is missing or holds
// anything else.
pid_t ReadPidFile(const std::string& path);

// The command line of a live process, arguments separated by spaces; "" if it is gone.
std::string CommandLine(pid_t pid);
// The parent of `pid`, or -1 if it is gone.
pid_t ParentPid(pid_t pid);
// Every live descendant of `root` (children, their children, ...), from /proc.
std::vector<pid_t> Descendants(pid_t root);

}  // namespace cohort
