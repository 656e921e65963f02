// A session's terminal server, `cohort-terminal serve` (docs/runtimes.md, "Shells"): the command
// of a shell session's task, which the agent starts in place of one of the job's. It holds the
// session's shell on a pseudo-terminal and serves it on the task's port to the master, which
// relays it to `cohort shell`; no sshd, no keys. It runs as the task's command, so the shell is
// inside the task: its account, GPUs, limits, image and log.
//
//   - A connection must send a hello (terminal_hello.h) carrying the job's credential within
//     hello_timeout; any other is refused and closed. At most max_pending connections wait.
//   - The first attach starts the shell ($SHELL, else /bin/bash, else /bin/sh) with the person's
//     terminal type and size. A later attach (after a dropped connection: `cohort shell
//     --attach`) finds the same shell, and first gets the last replay_bytes it wrote. One person
//     is attached at a time: a new attach detaches the old, which is told so.
//   - Input frames go to the shell's terminal (Ctrl-C is byte 3: the terminal interrupts the
//     shell's foreground job); resize frames set its size (the kernel sends SIGWINCH).
//   - Nobody attached, the shell keeps running and what it writes is read (the last
//     replay_bytes kept), so that it never blocks on a full terminal.
//   - The shell's end ends the server, with the shell's status, after an exit frame to the
//     person attached. SIGTERM (the task being stopped) hangs up the shell's terminal.
//
// Linked static from code without Cohort's common library, so that the agent can mount this one
// binary into any container image.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

namespace cohort::terminal {

struct ServerOptions {
  int port = 0;            // 0: $COHORT_TASK_PORT
  std::string credential;  // empty: $COHORT_JOB_CREDENTIAL (which the shell does not inherit)
  std::vector<std::string> shell;  // empty: $SHELL, /bin/bash or /bin/sh
  int hello_timeout_ms = 10'000;
  size_t replay_bytes = 64 * 1024;
  size_t max_pending = 8;
};

// The main of `cohort-terminal serve`: the shell's exit status (128 + its signal), or 2 when the
// server could not start (said on stderr).
int Serve(const ServerOptions& options);

}  // namespace cohort::terminal
