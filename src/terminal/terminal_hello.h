// The first frame the master sends a session's terminal server (FrameType::kHello): the job's
// credential, which only the master and the task hold (so that no one else who reaches the
// task's port gets its shell), who is attaching (for the task's log), and their terminal.
#pragma once

#include <optional>
#include <string>
#include <string_view>

#include "terminal/terminal_frame.h"

namespace cohort::terminal {

struct Hello {
  std::string credential;
  std::string user;
  std::string term;  // $TERM of the person's terminal; empty: "xterm"
  WindowSize size;
  bool operator==(const Hello&) const = default;
};

// At most this long a $TERM: names such as "xterm-256color".
inline constexpr size_t kMaxTermLength = 64;

// Whether `term` is a terminal type a shell may be given: 1 to kMaxTermLength characters of
// letters, digits and ".+-_".
bool ValidTerm(std::string_view term);

std::string EncodeHello(const Hello& hello);
// Nothing, with `error` set, for a payload that is not a hello.
std::optional<Hello> ParseHello(std::string_view payload, std::string* error);

}  // namespace cohort::terminal
