// `cohort-exec NAME COMMAND...`: runs COMMAND inside the task of this job named NAME, through its
// exec service (exec/exec_service.h), as ssh runs a command on a host: the words are joined with
// spaces and run by /bin/sh there. What mpirun's remote launch calls (OMPI_MCA_plm_rsh_agent).
#pragma once

#include <string>
#include <vector>

#include "common/time.h"

namespace cohort::exec {

struct RunOptions {
  std::string name;
  std::vector<std::string> words;
  // A worker's service may not listen yet when the launcher starts (a gang starts at once, not
  // in order): a refused connection is tried again until this has passed.
  Duration connect_for = std::chrono::seconds(60);
};

// The main of `cohort-exec NAME ...`: the command's exit status, 128 + its signal, or 255 when it
// could not run (said on stderr, as ssh does).
int RunRemote(const RunOptions& options);

}  // namespace cohort::exec
