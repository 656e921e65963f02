// cohort-run-task: the supervisor of one task, as `cohortd run-task`, in a binary of its own that
// links only what supervising needs. The agent starts one per task; starting all of cohortd (its
// HTTP server, SQLite, OpenSSL, protobuf) cost 3.4 ms of CPU each time, most of it the dynamic
// linker, which a burst of short jobs paid hundreds of times a second (docs/performance.md).
#include <cstdio>
#include <cstring>
#include <string>

#include "agent/task_supervisor.h"

int main(int argc, char** argv) {
  if (argc == 3 && std::strcmp(argv[1], "--task-dir") == 0 && argv[2][0] != '\0') {
    return cohort::agent::RunTaskSupervisor(argv[2]);
  }
  if (argc == 2 && (std::strcmp(argv[1], "--help") == 0 || std::strcmp(argv[1], "-h") == 0)) {
    std::printf(
        "Usage: cohort-run-task --task-dir DIR\n"
        "Supervises one task prepared in DIR (DIR/spec.json); started by cohortd agent, not meant "
        "to be run by hand.\n");
    return 0;
  }
  std::fprintf(stderr, "usage: cohort-run-task --task-dir DIR (see --help)\n");
  return 2;
}
