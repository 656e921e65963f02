// A task that runs in a container image (docs/runtimes.md): what the agent decides for it, written
// into spec.json's "container", and how the supervisor turns that into podman's commands. Pure
// functions of their inputs; the supervisor runs the commands.
//
// The container is podman's, rootful: podman and conmon run as root beside the supervisor, the
// command as the job's account (--user UID:GID, no capabilities, no new privileges), on the host
// network (rendezvous ports work as for bare tasks), with every directory the task's variables
// name mounted at the same path, so that $COHORT_* mean the same inside, and only the task's GPUs.
#pragma once

#include <sys/types.h>

#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "common/status.h"
#include "common/time.h"
#include "model/image_pull.h"
#include "model/json.h"
#include "model/start_failure.h"

namespace cohort::agent {

// A directory of the node, mounted at the same path inside the container.
struct ContainerMount {
  std::string path;
  bool read_only = false;
  bool operator==(const ContainerMount&) const = default;
};

struct ContainerTask {
  std::string podman;        // the podman program
  std::string oci_runtime;   // podman --runtime: "runc" or "crun"; empty: podman's default
  std::string image;         // qualified reference
  bool insecure = false;     // pull without TLS checks (--tls-verify=false)
  std::string name;          // the container's, unique on the node: ContainerNameOf
  int64_t nofile = 0;        // RLIMIT_NOFILE inside; 0: podman's default
  int64_t nproc = 0;         // RLIMIT_NPROC inside and the pids limit; 0: podman's default
  int64_t memory_bytes = 0;  // the memory limit (and /dev/shm's size); 0: none
  std::vector<ContainerMount> mounts;
  std::vector<std::string> devices;  // device nodes: the task's GPUs and NVIDIA's control nodes
  // The node's image cache (agent/image_cache.h) and its bound in bytes (0: none).
  std::string cache_dir = {};
  int64_t cache_bytes = 0;
  bool operator==(const ContainerTask&) const = default;
};

Json ToJson(const ContainerTask& c);
StatusOr<ContainerTask> ContainerTaskFromJson(const Json& j);

// A container's name, unique on the machine even where several agents share its podman (tests,
// or two agents on one host): "cohort-", the agent's instance (its first 12 characters: the
// data directory's, model/node.h), "-" and the task id, every character podman does not allow
// in a name made '-' ("cohort-3f9a0c1d2e4b-7.1.worker.0").
std::string ContainerNameOf(std::string_view instance, std::string_view task_id);

// `podman run` of `command` as uid:gid in `workdir`, with the variables of `env_file` (one
// NAME=value per line: WriteContainerEnvFile). Stays in the foreground: it exits with the
// command's status, and passes the signals it gets on to it through podman's init (catatonit),
// which also reaps what the command leaves, as a supervisor would.
std::vector<std::string> PodmanRunCommand(const ContainerTask& c, uid_t uid, gid_t gid,
                                          const std::string& workdir, const std::string& env_file,
                                          const std::vector<std::string>& command);
std::vector<std::string> PodmanImageExistsCommand(const ContainerTask& c);
std::vector<std::string> PodmanPullCommand(const ContainerTask& c);
// Removes the container whatever state it is in: after a supervisor that had to SIGKILL podman,
// the container may still run under conmon.
std::vector<std::string> PodmanRemoveCommand(const ContainerTask& c);

// The file's content for `env`: one NAME=value per line. kInvalidArgument naming the variable
// for a value podman's environment files cannot carry (a newline, or more than 64 KiB in a line).
StatusOr<std::string> ContainerEnvFile(const std::map<std::string, std::string>& env);

// Why a container did not get to run its command, from podman's exit status and what podman and
// the container's init wrote before the command would have (the start of the task's output).
// None where the command ran.
struct ContainerStartProblem {
  std::string message;
  std::optional<StartFailure> kind;  // kProgram for a command the image lacks
};
std::optional<ContainerStartProblem> ContainerStartProblemOf(
    int exit_code, std::string_view output, const ContainerTask& c,
    const std::vector<std::string>& command);

// Why a pull failed, from podman's output: kImage where the registry says the image does not
// exist (no retry helps), with podman's own words in `message`.
ContainerStartProblem PullProblemOf(std::string_view output, const ContainerTask& c);

// What `podman pull` draws on a terminal (its only form with byte counts): one line per layer,
// "Copying blob 8332a06c466a [=====>----] 29.0MiB / 143.1MiB", redrawn with carriage returns and
// cursor moves, ending "done" or "skipped: already exists". Fed the output as it comes; keeps the
// bytes of each layer, and the other lines (for the task's output, and for why a pull failed).
class PullProgressReader {
 public:
  void Feed(std::string_view output);
  // Bytes of the layers being fetched: done, and the total of those whose size is known.
  int64_t done_bytes() const;
  int64_t total_bytes() const;
  // The lines that are not progress ("Trying to pull ...", "Error: ..."), complete
  // lines only; taken (the reader forgets them). At most kMaxKeptText bytes are kept between
  // takes.
  std::string TakeLines();

  static constexpr size_t kMaxKeptText = 64 * 1024;

 private:
  void Line(std::string_view line);

  std::string partial_;
  std::string lines_;
  std::map<std::string, std::pair<int64_t, int64_t>> blobs_;  // id -> done, total
};

// The supervisor's record of its task's pull, in the task's directory, which the agent reports
// (TaskReport::image_pull): written every second while it runs, and once the pulled image is in
// the cache's records (a finished pull tells the agent to list them). Absent where the node had
// the image.
// In the form of model/json.h's ToJson(const ImagePull&).
inline constexpr char kImagePullFile[] = "image-pull.json";

// How long a pull may take before the task fails (a registry that stalls must not hold GPUs for
// ever).
inline constexpr Duration kMaxImagePull = std::chrono::minutes(30);

}  // namespace cohort::agent
