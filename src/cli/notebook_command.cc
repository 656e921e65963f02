// cohort notebook: Jupyter on GPUs, opened in a browser through the master (docs/runtimes.md,
// "Notebooks"). It submits a notebook session, waits until its Jupyter answers, and prints a
// one-time link that lets this browser in; `--open JOB` asks for another link to one that runs.
#include <fmt/format.h>

#include <thread>

#include "cli/cli.h"
#include "cli/session_jobs.h"

namespace cohort::cli {
namespace {

struct NotebookOptions {
  SessionOptions session = SessionOptions::Of("notebook");
  std::string open;
  bool no_browser = false;
  std::string output = "table";
};

// Jupyter answers a few seconds after its task starts (longer in an image pulled just now).
constexpr auto kJupyterStartLimit = std::chrono::minutes(3);

// Waits until the notebook's Jupyter answers through the master.
Status WaitForJupyter(client::CohortClient& c, JobId id, const std::string& node) {
  Progress progress;
  const auto deadline = std::chrono::steady_clock::now() + kJupyterStartLimit;
  while (true) {
    auto status = c.NotebookStatus(id);
    if (status.ok()) break;
    // 502 (not listening yet) and 503 come as kUnavailable; anything else is an answer.
    if (status.status().code() != StatusCode::kUnavailable) return status.status();
    if (std::chrono::steady_clock::now() > deadline) {
      return Status::DeadlineExceeded(fmt::format(
          "notebook {} runs, but its Jupyter did not answer within {} min: see its log with "
          "cohort logs {}",
          id, std::chrono::duration_cast<std::chrono::minutes>(kJupyterStartLimit).count(), id));
    }
    progress.Update(fmt::format("notebook {}: Jupyter is starting on node {}", id, node));
    std::this_thread::sleep_for(std::chrono::milliseconds(500));
  }
  progress.Done();
  return Status::Ok();
}

int RunNotebook(const GlobalOptions& g, const NotebookOptions& o) {
  auto c = Connect(g);
  if (!c.ok()) return Fail("notebook", c.status());
  auto running = RunningSession(**c, o.open, o.session);
  if (!running.ok()) return Fail("notebook", running.status());
  const JobId id = running->id;
  const std::string node = running->tasks.empty() ? "?" : running->tasks.front().node_id;
  if (Status up = WaitForJupyter(**c, id, node); !up.ok()) return Fail("notebook", up);
  auto link = (*c)->NotebookLink(id);
  if (!link.ok()) return Fail("notebook", link.status());
  const std::string url = link->value("url", (*c)->master_url() + link->value("path", ""));
  const bool opened = !o.no_browser && HasDesktop() && OpenInBrowser(url);
  if (o.output == "json") {
    (*link)["url"] = url;
    (*link)["node"] = node;
    (*link)["opened"] = opened;
    fmt::print("{}\n", link->dump(2));
    return 0;
  }
  // The link alone on stdout, for scripts; what it is on stderr.
  fmt::print("{}\n", url);
  fmt::print(stderr,
             "{}notebook {} runs on node {}: the link lets one browser in, once, until {} "
             "(cohort notebook --open {} prints another); cohort kill {} ends it\n",
             opened ? "opened in the browser; " : "", id, node,
             link->value("expires_at", std::string("?")), id, id);
  return 0;
}

}  // namespace

void AddNotebookCommand(CLI::App& app, GlobalOptions& g) {
  auto o = std::make_shared<NotebookOptions>();
  auto* cmd = app.add_subcommand(
      "notebook",
      "Start Jupyter on GPUs and print a link that opens it in your browser, through the\n"
      "master (docs/runtimes.md). Only you can open it. It runs until it is killed (cohort kill\n"
      "JOB); notebooks whose GPUs sit idle with no use are warned on the page, then ended.");
  AddSessionOptions(cmd, o->session);
  cmd->add_option("--open", o->open, "A new link to a notebook that runs already");
  cmd->add_flag("--no-browser", o->no_browser,
                "Only print the link; do not open it with xdg-open on a desktop");
  AddOutputOption(cmd, o->output);
  cmd->callback([&g, o] { Finish(RunNotebook(g, *o)); });
}

}  // namespace cohort::cli
