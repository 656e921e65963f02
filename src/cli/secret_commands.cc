// secret set / list / delete: environment secrets that job specs name as {secret: NAME}
// (docs/security.md, "Environment secrets"). A value never comes from the command line, where
// `ps` and the shell's history would show it: it is read from stdin or a file.
#include <fmt/format.h>
#include <termios.h>
#include <unistd.h>

#include <cstdio>
#include <fstream>
#include <iostream>

#include "cli/cli.h"
#include "model/json.h"
#include "model/json_errors.h"
#include "model/secret.h"

namespace cohort::cli {
namespace {

struct SecretOptions {
  std::string name;
  std::string team;
  std::string from_file;
  std::string output = "table";
};

// Team names are [A-Za-z0-9][A-Za-z0-9._-]{0,63}, as secret names are; checked here because
// the team goes into the URL.
Status CheckTeam(const std::string& team) {
  if (team.empty() || ValidateSecretName(team).ok()) return Status::Ok();
  return Status::InvalidArgument(fmt::format(
      "--team: \"{}\" is not a team name: use 1 to 64 letters, digits, '.', '_' or '-'", team));
}

// At most one byte more than a value may have, so that a longer input is told apart.
StatusOr<std::string> ReadBounded(std::istream& in, const std::string& what) {
  std::string value(kMaxSecretValueBytes + 3, '\0');  // a CRLF may end it
  in.read(value.data(), static_cast<std::streamsize>(value.size()));
  if (in.bad()) return Status::Internal(fmt::format("reading {} failed", what));
  value.resize(static_cast<size_t>(in.gcount()));
  if (value.size() == kMaxSecretValueBytes + 3) {
    return Status::InvalidArgument(
        fmt::format("{} is longer than {} bytes (64 KiB), the most a secret may hold", what,
                    kMaxSecretValueBytes));
  }
  return value;
}

// A terminal gets a prompt and one line, not echoed; a pipe or file is read whole.
StatusOr<std::string> ReadValue(const SecretOptions& o) {
  std::string value;
  if (!o.from_file.empty()) {
    std::ifstream file(o.from_file, std::ios::binary);
    if (!file)
      return Status::InvalidArgument(fmt::format("--from-file: cannot read {}", o.from_file));
    COHORT_ASSIGN_OR_RETURN(value, ReadBounded(file, o.from_file));
  } else if (::isatty(STDIN_FILENO)) {
    fmt::print(stderr, "value of secret {} (not shown): ", o.name);
    std::fflush(stderr);
    termios before{};
    bool quiet = ::tcgetattr(STDIN_FILENO, &before) == 0;
    if (quiet) {
      termios hidden = before;
      hidden.c_lflag &= ~static_cast<tcflag_t>(ECHO);
      quiet = ::tcsetattr(STDIN_FILENO, TCSAFLUSH, &hidden) == 0;
    }
    std::getline(std::cin, value);
    if (quiet) ::tcsetattr(STDIN_FILENO, TCSAFLUSH, &before);
    fmt::print(stderr, "\n");
  } else {
    COHORT_ASSIGN_OR_RETURN(value, ReadBounded(std::cin, "stdin"));
  }
  // `echo value | cohort secret set` and files written by editors end with a newline that is
  // no part of the secret.
  if (value.ends_with("\r\n")) {
    value.resize(value.size() - 2);
  } else if (value.ends_with('\n')) {
    value.pop_back();
  }
  COHORT_RETURN_IF_ERROR(ValidateSecretValue(value, "the value"));
  return value;
}

std::string Owner(const std::string& team) { return team.empty() ? "you" : "team " + team; }

int RunSet(const GlobalOptions& g, const SecretOptions& o) {
  for (Status s : {ValidateSecretName(o.name, "NAME"), CheckTeam(o.team)}) {
    if (!s.ok()) return Fail("secret set", s);
  }
  auto value = ReadValue(o);
  if (!value.ok()) return Fail("secret set", value.status());
  auto c = Connect(g);
  if (!c.ok()) return Fail("secret set", c.status());
  auto saved = (*c)->SetSecret(o.name, *value, o.team);
  if (!saved.ok()) return Fail("secret set", saved.status());
  fmt::print("secret {} set for {}; a spec uses it as {{secret: {}}}\n", o.name, Owner(o.team),
             o.name);
  return 0;
}

int RunList(const GlobalOptions& g, const SecretOptions& o) {
  auto c = Connect(g);
  if (!c.ok()) return Fail("secret list", c.status());
  auto doc = (*c)->Secrets();
  if (!doc.ok()) return Fail("secret list", doc.status());
  if (o.output == "json") {
    fmt::print("{}\n", doc->dump(2));
    return 0;
  }
  try {
    Table table({"NAME", "SCOPE", "OWNER", "UPDATED"});
    for (const auto& s : (*doc)["secrets"]) {
      table.Add({s["name"].get<std::string>(), s["scope"].get<std::string>(),
                 s["owner"].get<std::string>(), s["updated_at"].get<std::string>()});
    }
    table.Print(stdout);
  } catch (const std::exception& e) {
    return Fail("secret list",
                Status::Internal(fmt::format("unexpected answer: {}", JsonErrorText(e))));
  }
  return 0;
}

int RunDelete(const GlobalOptions& g, const SecretOptions& o) {
  for (Status s : {ValidateSecretName(o.name, "NAME"), CheckTeam(o.team)}) {
    if (!s.ok()) return Fail("secret delete", s);
  }
  auto c = Connect(g);
  if (!c.ok()) return Fail("secret delete", c.status());
  auto deleted = (*c)->DeleteSecret(o.name, o.team);
  if (!deleted.ok()) return Fail("secret delete", deleted.status());
  fmt::print("secret {} of {} deleted\n", o.name, Owner(o.team));
  return 0;
}

}  // namespace

void AddSecretCommands(CLI::App& app, GlobalOptions& g) {
  auto* secret = app.add_subcommand(
      "secret",
      "Environment secrets: values a job spec names as `env: {KEY: {secret: NAME}}`, kept by the "
      "master and put only into the task's environment");
  secret->require_subcommand(1);

  auto set = std::make_shared<SecretOptions>();
  auto* s = secret->add_subcommand(
      "set",
      "Create or replace a secret, yours or (--team) a team's; the value is read from stdin "
      "(one trailing newline dropped), or --from-file, never from the command line: "
      "cohort secret set wandb < key.txt");
  s->add_option("NAME", set->name, "Secret name: 1-64 letters, digits, '.', '_' or '-'")
      ->required();
  s->add_option("--team", set->team,
                "The team's secret, for every member's jobs (team admins and cluster admins)");
  s->add_option("--from-file", set->from_file, "Read the value from this file instead of stdin");
  s->callback([&g, set] { Finish(RunSet(g, *set)); });

  auto list = std::make_shared<SecretOptions>();
  auto* l = secret->add_subcommand(
      "list", "Your secrets and your teams' (names, owners, times; never values)");
  AddOutputOption(l, list->output);
  l->callback([&g, list] { Finish(RunList(g, *list)); });

  auto del = std::make_shared<SecretOptions>();
  auto* d = secret->add_subcommand("delete", "Delete a secret, yours or (--team) a team's");
  d->add_option("NAME", del->name, "Secret name")->required();
  d->add_option("--team", del->team, "The team's secret (team admins and cluster admins)");
  d->callback([&g, del] { Finish(RunDelete(g, *del)); });
}

}  // namespace cohort::cli
