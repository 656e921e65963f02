// cohort dashboard: a one-time link that signs the current CLI user in to the dashboard
// (docs/security.md, "Dashboard sign-in"), opened in the desktop's browser when there is one.
#include <fmt/format.h>

#include "cli/cli.h"
#include "cli/session_jobs.h"

namespace cohort::cli {
namespace {

struct DashboardOptions {
  bool no_open = false;
  std::string output = "table";
};

int RunDashboard(const GlobalOptions& g, const DashboardOptions& o) {
  auto c = Connect(g);
  if (!c.ok()) return Fail("dashboard", c.status());
  auto link = SignInLink(**c);
  if (!link.ok()) return Fail("dashboard", link.status());
  const std::string url = (*link)["url"].get<std::string>();
  const bool opened = !o.no_open && HasDesktop() && OpenInBrowser(url);
  if (o.output == "json") {
    (*link)["opened"] = opened;
    fmt::print("{}\n", link->dump(2));
    return 0;
  }
  // The link alone on stdout, for `xdg-open "$(cohort dashboard --no-open)"` and the like.
  fmt::print("{}\n", url);
  fmt::print(stderr, "{}signs in {}; works once, until {}\n",
             opened ? "opened in the browser; " : "", (*link)["user"].get<std::string>(),
             (*link)["expires_at"].get<std::string>());
  return 0;
}

}  // namespace

void AddDashboardCommand(CLI::App& app, GlobalOptions& g) {
  auto o = std::make_shared<DashboardOptions>();
  auto* cmd = app.add_subcommand(
      "dashboard",
      "Print a link that signs you in to the dashboard: it works once, for a few minutes, and "
      "opens with xdg-open on a desktop ($DISPLAY or $WAYLAND_DISPLAY set)");
  cmd->add_flag("--no-open", o->no_open, "Only print the link; do not open a browser");
  AddOutputOption(cmd, o->output);
  cmd->callback([&g, o] {
    int rc = RunDashboard(g, *o);
    if (rc != 0) throw CLI::RuntimeError(rc);
  });
}

}  // namespace cohort::cli
