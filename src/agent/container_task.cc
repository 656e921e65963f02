#include "agent/container_task.h"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <cstdlib>
#include <utility>

namespace cohort::agent {
namespace {

// The last line of `output` that starts with `prefix`, from the prefix on; empty: none.
std::string LastLineStarting(std::string_view output, std::string_view prefix) {
  std::string found;
  size_t at = 0;
  while (at < output.size()) {
    size_t end = output.find('\n', at);
    if (end == std::string_view::npos) end = output.size();
    std::string_view line = output.substr(at, end - at);
    if (line.substr(0, prefix.size()) == prefix) found = std::string(line);
    at = end + 1;
  }
  return found;
}

bool Contains(std::string_view text, std::string_view what) {
  return text.find(what) != std::string_view::npos;
}

std::vector<std::string> Podman(const ContainerTask& c) {
  std::vector<std::string> argv = {c.podman};
  if (!c.oci_runtime.empty()) argv.insert(argv.end(), {"--runtime", c.oci_runtime});
  return argv;
}

// Podman's environment files are read a line at a time, by a scanner whose lines end at 64 KiB.
constexpr size_t kMaxEnvLine = 64 * 1024 - 1;

}  // namespace

Json ToJson(const ContainerTask& c) {
  Json mounts = Json::array();
  for (const auto& m : c.mounts)
    mounts.push_back(Json{{"path", m.path}, {"read_only", m.read_only}});
  return Json{{"podman", c.podman},
              {"oci_runtime", c.oci_runtime},
              {"image", c.image},
              {"insecure", c.insecure},
              {"name", c.name},
              {"nofile", c.nofile},
              {"nproc", c.nproc},
              {"memory_bytes", c.memory_bytes},
              {"mounts", std::move(mounts)},
              {"devices", c.devices},
              {"cache_dir", c.cache_dir},
              {"cache_bytes", c.cache_bytes}};
}

StatusOr<ContainerTask> ContainerTaskFromJson(const Json& j) {
  try {
    ContainerTask c;
    c.podman = j.at("podman").get<std::string>();
    c.oci_runtime = j.value("oci_runtime", "");
    c.image = j.at("image").get<std::string>();
    c.insecure = j.value("insecure", false);
    c.name = j.at("name").get<std::string>();
    c.nofile = j.value("nofile", int64_t{0});
    c.nproc = j.value("nproc", int64_t{0});
    c.memory_bytes = j.value("memory_bytes", int64_t{0});
    for (const auto& m : j.value("mounts", Json::array())) {
      c.mounts.push_back(
          ContainerMount{m.at("path").get<std::string>(), m.value("read_only", false)});
    }
    c.devices = j.value("devices", std::vector<std::string>{});
    c.cache_dir = j.value("cache_dir", "");
    c.cache_bytes = j.value("cache_bytes", int64_t{0});
    if (c.podman.empty() || c.image.empty() || c.name.empty()) {
      return Status::InvalidArgument("container: podman, image and name must be set");
    }
    return c;
  } catch (const std::exception& e) {
    return Status::InvalidArgument(fmt::format("container: {}", e.what()));
  }
}

std::string ContainerNameOf(std::string_view instance, std::string_view task_id) {
  std::string name = "cohort-";
  for (char ch : std::string(instance.substr(0, 12)) + "-" + std::string(task_id)) {
    bool allowed = (ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') ||
                   (ch >= '0' && ch <= '9') || ch == '_' || ch == '.' || ch == '-';
    name += allowed ? ch : '-';
  }
  return name;
}

std::vector<std::string> PodmanRunCommand(const ContainerTask& c, uid_t uid, gid_t gid,
                                          const std::string& workdir, const std::string& env_file,
                                          const std::vector<std::string>& command) {
  std::vector<std::string> argv = Podman(c);
  argv.insert(argv.end(),
              {"run", "--rm", "--init", "--name", c.name,
               // The supervisor keeps the output (output.log): a second copy in podman's storage
               // would double the disk a task that writes gigabytes takes.
               "--log-driver", "none",
               // The agent pulled it, or the task does not start.
               "--pull", "never", "--network", "host", "--user", fmt::format("{}:{}", uid, gid),
               "--workdir", workdir, "--env-file", env_file, "--cap-drop", "all", "--security-opt",
               "no-new-privileges"});
  if (c.nofile > 0) {
    argv.insert(argv.end(), {"--ulimit", fmt::format("nofile={}:{}", c.nofile, c.nofile)});
  }
  if (c.nproc > 0) {
    argv.insert(argv.end(), {"--ulimit", fmt::format("nproc={}:{}", c.nproc, c.nproc),
                             "--pids-limit", std::to_string(c.nproc)});
  }
  if (c.memory_bytes > 0) {
    // PyTorch's data loaders pass batches through /dev/shm, whose default (64 MiB) is too small;
    // its pages count against the memory limit as any other.
    argv.insert(argv.end(),
                {"--memory", std::to_string(c.memory_bytes), "--memory-swap",
                 std::to_string(c.memory_bytes), "--shm-size", std::to_string(c.memory_bytes)});
  }
  for (const auto& m : c.mounts) {
    argv.insert(argv.end(),
                {"--volume", fmt::format("{}:{}:{}", m.path, m.path, m.read_only ? "ro" : "rw")});
  }
  for (const auto& d : c.devices) argv.insert(argv.end(), {"--device", d});
  argv.push_back(c.image);
  argv.insert(argv.end(), command.begin(), command.end());
  return argv;
}

std::vector<std::string> PodmanImageExistsCommand(const ContainerTask& c) {
  return {c.podman, "image", "exists", c.image};
}

std::vector<std::string> PodmanPullCommand(const ContainerTask& c) {
  std::vector<std::string> argv = {c.podman, "pull"};
  if (c.insecure) argv.push_back("--tls-verify=false");
  argv.push_back(c.image);
  return argv;
}

std::vector<std::string> PodmanRemoveCommand(const ContainerTask& c) {
  std::vector<std::string> argv = Podman(c);
  argv.insert(argv.end(), {"rm", "--force", "--ignore", "--time", "0", c.name});
  return argv;
}

StatusOr<std::string> ContainerEnvFile(const std::map<std::string, std::string>& env) {
  std::string out;
  for (const auto& [name, value] : env) {
    if (value.find('\n') != std::string::npos || value.find('\r') != std::string::npos) {
      return Status::InvalidArgument(fmt::format(
          "variable {} holds a line break, which a container's environment cannot carry "
          "(podman --env-file): pass it in a file",
          name));
    }
    if (name.size() + 1 + value.size() > kMaxEnvLine) {
      return Status::InvalidArgument(fmt::format(
          "variable {} is {} bytes long; a container's variables hold at most {} (podman "
          "--env-file): pass it in a file",
          name, value.size(), kMaxEnvLine - name.size() - 1));
    }
    out += name + "=" + value + "\n";
  }
  return out;
}

std::optional<ContainerStartProblem> ContainerStartProblemOf(
    int exit_code, std::string_view output, const ContainerTask& c,
    const std::vector<std::string>& command) {
  // catatonit, podman's init, could not run the command: it is not in the image, or not a program.
  if (std::string said = LastLineStarting(output, "ERROR (catatonit");
      !said.empty() && Contains(said, "failed to exec pid1")) {
    bool missing = Contains(said, "No such file or directory");
    bool denied = Contains(said, "Permission denied");
    std::string program = command.empty() ? "" : command.front();
    std::string why = missing  ? "is not in the image (nor on its PATH)"
                      : denied ? "is not executable in the image"
                               : "cannot be run in the image";
    return ContainerStartProblem{
        fmt::format("program \"{}\" {} {} ({})", program, why, c.image, said),
        missing || denied ? std::optional(StartFailure::kProgram) : std::nullopt};
  }
  // podman's own failures: 125 for podman, 126 and 127 for a command the runtime could not start.
  if (exit_code != 125 && exit_code != 126 && exit_code != 127) return std::nullopt;
  std::string said = LastLineStarting(output, "Error: ");
  if (said.empty()) return std::nullopt;
  std::optional<StartFailure> kind;
  if (Contains(said, "executable file") || Contains(said, "command that was not found")) {
    kind = StartFailure::kProgram;
  } else if (Contains(said, "workdir")) {
    kind = StartFailure::kWorkdir;
  }
  return ContainerStartProblem{
      fmt::format("the container of image {} could not start: {}", c.image, said.substr(7)), kind};
}

ContainerStartProblem PullProblemOf(std::string_view output, const ContainerTask& c) {
  std::string said = LastLineStarting(output, "Error: ");
  if (said.empty()) {
    // The last non-empty line, whatever it is.
    std::string_view rest = output;
    while (!rest.empty() && (rest.back() == '\n' || rest.back() == ' ')) rest.remove_suffix(1);
    size_t nl = rest.rfind('\n');
    said = std::string(nl == std::string_view::npos ? rest : rest.substr(nl + 1));
  } else {
    said = said.substr(7);
  }
  if (said.size() > 512) said = said.substr(0, 512) + "...";
  // What a registry answers for a repository or tag it does not have (the distribution API's
  // MANIFEST_UNKNOWN and NAME_UNKNOWN errors).
  bool absent = Contains(said, "manifest unknown") || Contains(said, "name unknown") ||
                Contains(said, "not found: manifest") ||
                Contains(said, "repository name not known");
  return ContainerStartProblem{fmt::format("cannot pull image {}{}: {}", c.image,
                                           absent ? " (the registry does not have it)" : "", said),
                               absent ? std::optional(StartFailure::kImage) : std::nullopt};
}

namespace {

// "29.0MiB" -> bytes; -1 if it is not a size.
int64_t SizeOf(std::string_view text) {
  size_t unit = 0;
  while (unit < text.size() &&
         (std::isdigit(static_cast<unsigned char>(text[unit])) || text[unit] == '.')) {
    ++unit;
  }
  if (unit == 0) return -1;
  double value = std::strtod(std::string(text.substr(0, unit)).c_str(), nullptr);
  std::string_view suffix = text.substr(unit);
  double scale = suffix == "B" || suffix == "b"     ? 1.0
                 : suffix == "KiB"                  ? 1024.0
                 : suffix == "MiB"                  ? 1024.0 * 1024
                 : suffix == "GiB"                  ? 1024.0 * 1024 * 1024
                 : suffix == "TiB"                  ? 1024.0 * 1024 * 1024 * 1024
                 : suffix == "kB" || suffix == "KB" ? 1000.0
                 : suffix == "MB"                   ? 1e6
                 : suffix == "GB"                   ? 1e9
                                                    : -1;
  if (scale < 0) return -1;
  return static_cast<int64_t>(value * scale);
}

// The text without terminal escape sequences (ESC [ ... letter).
std::string WithoutEscapes(std::string_view text) {
  std::string out;
  for (size_t i = 0; i < text.size(); ++i) {
    if (text[i] == '\x1b' && i + 1 < text.size() && text[i + 1] == '[') {
      i += 2;
      while (i < text.size() && !std::isalpha(static_cast<unsigned char>(text[i]))) ++i;
      continue;
    }
    out += text[i];
  }
  return out;
}

}  // namespace

void PullProgressReader::Feed(std::string_view output) {
  partial_ += output;
  size_t start = 0;
  for (size_t i = 0; i < partial_.size(); ++i) {
    if (partial_[i] != '\r' && partial_[i] != '\n') continue;
    Line(std::string_view(partial_).substr(start, i - start));
    start = i + 1;
  }
  partial_.erase(0, start);
  // A line longer than any podman draws: not podman's; dropped rather than kept growing.
  if (partial_.size() > 4096) partial_.clear();
}

void PullProgressReader::Line(std::string_view raw) {
  std::string line = WithoutEscapes(raw);
  while (!line.empty() && line.back() == ' ') line.pop_back();
  if (line.empty()) return;
  constexpr std::string_view kBlob = "Copying blob ";
  if (line.rfind(kBlob, 0) == 0) {
    std::string_view rest = std::string_view(line).substr(kBlob.size());
    size_t space = rest.find(' ');
    std::string id(rest.substr(0, space));
    auto& [done, total] = blobs_[id];
    if (space == std::string_view::npos) return;
    rest = rest.substr(space + 1);
    if (rest.rfind("done", 0) == 0) {
      done = total;
      return;
    }
    if (rest.rfind("skipped", 0) == 0) {
      blobs_.erase(id);
      return;
    }
    size_t slash = rest.rfind(" / ");
    size_t bar_end = rest.rfind("] ", slash);
    if (slash == std::string_view::npos || bar_end == std::string_view::npos) return;
    int64_t d = SizeOf(rest.substr(bar_end + 2, slash - bar_end - 2));
    std::string_view after = rest.substr(slash + 3);
    int64_t t = SizeOf(after.substr(0, after.find(' ')));
    if (d >= 0) done = d;
    if (t >= 0) total = t;
    return;
  }
  if (line == "…" || line.rfind("Copying config", 0) == 0) return;
  if (lines_.size() + line.size() + 1 > kMaxKeptText) return;
  lines_ += line + "\n";
}

int64_t PullProgressReader::done_bytes() const {
  int64_t sum = 0;
  for (const auto& [id, b] : blobs_) sum += b.first;
  return sum;
}

int64_t PullProgressReader::total_bytes() const {
  int64_t sum = 0;
  for (const auto& [id, b] : blobs_) sum += b.second;
  return sum;
}

std::string PullProgressReader::TakeLines() { return std::exchange(lines_, {}); }

}  // namespace cohort::agent
