// cohort-terminal: the server of a shell session's terminal (terminal/terminal_server.h), which
// the agent runs as a session's task, on the node or inside its image.
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

#include "terminal/terminal_server.h"

namespace {

constexpr const char* kUsage =
    "Usage: cohort-terminal serve [--port PORT]\n"
    "\n"
    "Serves a shell session's terminal (cohort shell) on PORT ($COHORT_TASK_PORT by default)\n"
    "to the holder of the job's credential ($COHORT_JOB_CREDENTIAL): the master, which relays\n"
    "it to the person attached. Cohort's agent starts it as the task of a session; it is not\n"
    "run by hand.\n";

int Usage(const char* why) {
  std::fprintf(stderr, "cohort-terminal: %s\n%s", why, kUsage);
  return 2;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc >= 2 && (std::strcmp(argv[1], "--help") == 0 || std::strcmp(argv[1], "-h") == 0)) {
    std::fputs(kUsage, stdout);
    return 0;
  }
  if (argc < 2 || std::strcmp(argv[1], "serve") != 0) return Usage("expected: serve");
  cohort::terminal::ServerOptions options;
  for (int i = 2; i < argc; ++i) {
    if (std::strcmp(argv[i], "--port") == 0 && i + 1 < argc) {
      char* end = nullptr;
      long port = std::strtol(argv[++i], &end, 10);
      if (*end != '\0' || port < 1 || port > 65535) return Usage("--port takes 1 to 65535");
      options.port = static_cast<int>(port);
    } else {
      return Usage((std::string("unknown argument ") + argv[i]).c_str());
    }
  }
  return cohort::terminal::Serve(options);
}
