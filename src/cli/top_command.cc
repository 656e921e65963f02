// top: a live view of the cluster's GPUs in the terminal (nodes, each GPU with the job holding
// it and its utilisation), redrawn in place until q; one frame when not on a terminal.
#include <fmt/format.h>
#include <poll.h>
#include <termios.h>
#include <unistd.h>

#include <map>

#include "cli/cli.h"
#include "common/units.h"
#include "os/real_clock.h"

namespace cohort::cli {
namespace {

struct TopOptions {
  double interval = 2;
  bool once = false;
};

// The terminal in a mode where q is read at once and not echoed, restored however top ends.
// Ctrl-C comes as a byte too (no signal), so that the terminal is always restored.
class RawTerminal {
 public:
  RawTerminal() {
    if (::tcgetattr(STDIN_FILENO, &saved_) != 0) return;
    termios raw = saved_;
    raw.c_lflag &= ~static_cast<tcflag_t>(ICANON | ECHO | ISIG);
    raw.c_cc[VMIN] = 0;
    raw.c_cc[VTIME] = 0;
    active_ = ::tcsetattr(STDIN_FILENO, TCSANOW, &raw) == 0;
    fmt::print("\x1b[?1049h\x1b[?25l");  // the alternate screen, no cursor
  }
  ~RawTerminal() {
    fmt::print("\x1b[?25h\x1b[?1049l");
    std::fflush(stdout);
    if (active_) ::tcsetattr(STDIN_FILENO, TCSANOW, &saved_);
  }
  RawTerminal(const RawTerminal&) = delete;
  RawTerminal& operator=(const RawTerminal&) = delete;

 private:
  termios saved_{};
  bool active_ = false;
};

// Waits up to `ms` for a key; true if it was q, Q or Ctrl-C.
bool QuitPressed(int ms) {
  pollfd pfd{STDIN_FILENO, POLLIN, 0};
  if (::poll(&pfd, 1, ms) <= 0) return false;
  char keys[32];
  ssize_t n = ::read(STDIN_FILENO, keys, sizeof(keys));
  for (ssize_t i = 0; i < n; ++i) {
    if (keys[i] == 'q' || keys[i] == 'Q' || keys[i] == 3) return true;
  }
  return false;
}

std::string Percent(const Json& gpu, const char* field) {
  auto it = gpu.find(field);
  if (it == gpu.end() || !it->is_number()) return "-";
  return fmt::format("{:.0f}%", it->get<double>());
}

std::string MemoryUsed(const Json& gpu) {
  auto used = gpu.find("memory_used_bytes");
  if (used == gpu.end() || !used->is_number_integer()) return "-";
  return fmt::format("{}/{}", FormatByteSizeApprox(used->get<int64_t>()),
                     gpu.value("memory", std::string("?")));
}

// One screen: what `cohort top` shows at a moment.
StatusOr<std::string> Frame(client::CohortClient& c, const std::string& url) {
  COHORT_ASSIGN_OR_RETURN(Json nodes, c.Nodes());
  COHORT_ASSIGN_OR_RETURN(auto running, c.ListJobs(JobState::kRunning));
  COHORT_ASSIGN_OR_RETURN(auto pending, c.ListJobs(JobState::kPending));
  std::map<JobId, const Job*> jobs;
  for (const Job& j : running) jobs[j.id] = &j;

  int ready = 0, other = 0, drained = 0, total = 0, held = 0;
  Table table({"NODE", "STATE", "GPU", "UTIL", "MEMORY", "JOB", "NAME", "USER", "TEAM", "TASK"});
  for (const auto& n : nodes["nodes"]) {
    const std::string state = NodeStateText(n);
    (n["state"] == "READY" ? ready : other) += 1;
    drained += n.value("drained", false) ? 1 : 0;
    bool first = true;
    for (const auto& gpu : n["gpus"]) {
      ++total;
      std::vector<std::string> row = {first ? n["id"].get<std::string>() : "", first ? state : "",
                                      std::to_string(gpu["index"].get<int>()),
                                      Percent(gpu, "utilization"), MemoryUsed(gpu)};
      if (gpu["job_id"].is_null()) {
        row.insert(row.end(), {"-", "", "", "", ""});
      } else {
        ++held;
        JobId id = gpu["job_id"].get<JobId>();
        auto it = jobs.find(id);
        row.insert(row.end(),
                   {std::to_string(id), it == jobs.end() ? "" : it->second->spec.name,
                    it == jobs.end() ? "" : it->second->user,
                    it == jobs.end() ? "" : it->second->spec.team, gpu["task"].get<std::string>()});
      }
      table.Add(std::move(row));
      first = false;
    }
    if (first) table.Add({n["id"].get<std::string>(), state, "-", "", "", "", "", "", "", ""});
  }
  std::string text = fmt::format(
      "cohort top: {}   {}   (q quits)\n"
      "nodes: {} ready, {} not ready, {} drained   GPUs: {} of {} held   jobs: {} running, {} "
      "pending\n\n",
      url, FormatTimestamp(RealClock().Now()).substr(0, 19), ready, other, drained, held, total,
      running.size(), pending.size());
  char* buffer = nullptr;
  size_t size = 0;
  if (std::FILE* out = ::open_memstream(&buffer, &size)) {
    table.Print(out);
    std::fclose(out);
    text.append(buffer, size);
    std::free(buffer);
  }
  return text;
}

int RunTop(const GlobalOptions& g, const TopOptions& o) {
  auto c = Connect(g);
  if (!c.ok()) return Fail("top", c.status());
  const std::string url = MasterUrl(g);
  if (o.once || !::isatty(STDOUT_FILENO) || !::isatty(STDIN_FILENO)) {
    auto frame = Frame(**c, url);
    if (!frame.ok()) return Fail("top", frame.status());
    fmt::print("{}", *frame);
    return 0;
  }
  RawTerminal terminal;
  const int wait_ms = static_cast<int>(o.interval * 1000);
  for (;;) {
    auto frame = Frame(**c, url);
    std::string text =
        frame.ok() ? *frame
                   : fmt::format("cohort top: {}\n(retrying; q quits)\n", frame.status().message());
    // In raw mode a newline does not return the cursor: each line ends in \r\n, and whatever
    // the last frame left on a line is cleared.
    std::string screen = "\x1b[H";
    for (char ch : text) screen += ch == '\n' ? std::string("\x1b[K\r\n") : std::string(1, ch);
    screen += "\x1b[J";
    fmt::print("{}", screen);
    std::fflush(stdout);
    if (QuitPressed(wait_ms)) return 0;
  }
}

}  // namespace

void AddTopCommand(CLI::App& app, GlobalOptions& g) {
  auto o = std::make_shared<TopOptions>();
  auto* top = app.add_subcommand(
      "top",
      "A live view of the GPUs: each node's GPUs, the job holding each and its use (q quits)");
  top->add_option("--interval", o->interval, "Seconds between refreshes (default 2)")
      ->check(CLI::Range(0.2, 3600.0));
  top->add_flag("--once", o->once,
                "Print one frame and exit (what top does when not on a terminal)");
  top->callback([&g, o] {
    int rc = RunTop(g, *o);
    if (rc != 0) throw CLI::RuntimeError(rc);
  });
}

}  // namespace cohort::cli
