// The working directory of a task (`tasks[].workdir`, docs/job-spec.md): an absolute path on the
// node, or a path relative to the task's own directory on the agent. A `..` component is never
// allowed, so a relative workdir cannot leave the task's directory (and an absolute one says
// plainly where it goes). The spec parser refuses such a workdir, and the agent checks again
// before it starts a task, so that a master that let one through cannot make it run elsewhere.
#pragma once

#include <optional>
#include <string>
#include <string_view>

namespace cohort {

// Why `workdir` may not be used ("must not contain a '..' component ..."), or nothing if it
// may. The empty workdir (the task's directory itself) is fine.
std::optional<std::string> WorkdirProblem(std::string_view workdir);

// A spec's workdir as the spec keeps it: an absolute one as it is, a relative one below
// `base_dir` (the spec file's directory, as the CLI reads it; empty: kept relative), lexically
// normal, "" for the task's directory itself. Only for a workdir without a problem.
std::string AnchorWorkdir(const std::string& base_dir, const std::string& workdir);

// Where a task whose own directory is `task_dir` runs: `task_dir` for an empty workdir, the
// workdir itself when absolute, else the workdir below `task_dir`. Only for a workdir without
// a problem.
std::string ResolveWorkdir(const std::string& task_dir, const std::string& workdir);

}  // namespace cohort
