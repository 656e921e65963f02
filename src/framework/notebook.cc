// A notebook session (issue 31, item 5): Jupyter as the session's task.
#include <fmt/format.h>

#include "framework/frameworks.h"

namespace cohort::framework {

std::string NotebookBasePath(JobId job) { return fmt::format("/api/v1/jobs/{}/notebook/", job); }

std::vector<std::string> NotebookCommand(const Job& job, const Task& self) {
  // On every address of the node: the master connects to the task's host. Only holders of the
  // token get in, and only the master has it. The master is the page's origin, not the node.
  return {"jupyter-notebook",
          "--no-browser",
          "--allow-root",
          "--ip=0.0.0.0",
          fmt::format("--port={}", self.port),
          "--NotebookApp.base_url=" + NotebookBasePath(job.id),
          "--NotebookApp.allow_origin=*",
          "--NotebookApp.port_retries=0"};
}

}  // namespace cohort::framework
