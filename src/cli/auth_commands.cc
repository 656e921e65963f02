// login, logout, whoami; user, token; team add-member / remove-member / members
// (docs/security.md).
#include <fmt/format.h>
#include <unistd.h>

#include <iostream>

#include "cli/cli.h"
#include "cli/credentials.h"
#include "model/json.h"

namespace cohort::cli {
namespace {

// Runs `work` with a connected client; prints the failure as "cohort <command>: ...".
template <typename Work>
void WithClient(const GlobalOptions& g, const std::string& command, Work work) {
  auto c = Connect(g);
  if (!c.ok()) Finish(Fail(command, c.status()));
  Status s = work(**c);
  if (!s.ok()) Finish(Fail(command, s));
}

std::string Text(const Json& j, const char* key) {
  auto it = j.find(key);
  return it != j.end() && it->is_string() ? it->get<std::string>() : "-";
}

std::string TeamsText(const Json& teams) {
  std::string out;
  for (const auto& [team, role] : teams.items()) {
    if (!out.empty()) out += ",";
    out += team + ":" + role.get<std::string>();
  }
  return out.empty() ? "-" : out;
}

void PrintUsers(const Json& users) {
  Table table({"USER", "ADMIN", "TEAMS", "DEFAULT TEAM", "UID", "GID", "CREATED"});
  for (const auto& u : users) {
    table.Add({Text(u, "name"), u["admin"].get<bool>() ? "yes" : "no", TeamsText(u["teams"]),
               u.value("default_team", Json()).is_string() ? Text(u, "default_team") : "-",
               u["uid"].is_null() ? "-" : std::to_string(u["uid"].get<int64_t>()),
               u["gid"].is_null() ? "-" : std::to_string(u["gid"].get<int64_t>()),
               Text(u, "created_at")});
  }
  table.Print(stdout);
}

void PrintTokens(const Json& tokens) {
  Table table({"ID", "KIND", "SUBJECT", "DESCRIPTION", "CREATED", "EXPIRES", "STATE"});
  for (const auto& t : tokens) {
    std::string state = !t["revoked_at"].is_null() ? "revoked"
                        : t["valid"].get<bool>()   ? "valid"
                                                   : "expired";
    table.Add({Text(t, "id"), Text(t, "kind"), Text(t, "subject"),
               t["description"].get<std::string>().empty() ? "-" : Text(t, "description"),
               Text(t, "created_at"), t["expires_at"].is_null() ? "never" : Text(t, "expires_at"),
               state});
  }
  table.Print(stdout);
}

void Print(const Json& doc, const std::string& output, const std::function<void()>& table) {
  if (output == "json") {
    fmt::print("{}\n", doc.dump(2));
  } else {
    table();
  }
}

// "vision:admin" or "vision" (a member).
StatusOr<std::pair<std::string, std::string>> TeamAndRole(const std::string& text) {
  auto colon = text.find(':');
  std::string team = text.substr(0, colon);
  std::string role = colon == std::string::npos ? "member" : text.substr(colon + 1);
  if (team.empty()) return Status::InvalidArgument("--team: \"" + text + "\" names no team");
  return std::make_pair(team, role);
}

void AddLogin(CLI::App& app, GlobalOptions& g) {
  auto token_stdin = std::make_shared<bool>(false);
  auto* login = app.add_subcommand(
      "login", "Check a token with the master and save it for this master URL (0600, in " +
                   CredentialsPath() + "); reads it from stdin, or --token / $COHORT_TOKEN");
  login->callback([&g, token_stdin] {
    GlobalOptions with = g;
    if (with.token.empty()) {
      if (::isatty(STDIN_FILENO)) fmt::print(stderr, "token: ");
      std::getline(std::cin, with.token);
      while (!with.token.empty() && (with.token.back() == '\r' || with.token.back() == ' ')) {
        with.token.pop_back();
      }
    }
    if (with.token.empty()) {
      Finish(Fail("login", Status::InvalidArgument(
                               "no token given: pipe one in, or pass --token; an admin makes "
                               "one with `cohort token create --user NAME`")));
    }
    WithClient(with, "login", [&](client::CohortClient& c) -> Status {
      COHORT_ASSIGN_OR_RETURN(Json me, c.WhoAmI());
      COHORT_RETURN_IF_ERROR(SaveToken(MasterUrl(with), with.token));
      fmt::print("logged in to {} as {}{}\n", MasterUrl(with), Text(me, "name"),
                 me["admin"].get<bool>() ? " (admin)" : "");
      return Status::Ok();
    });
  });

  auto* logout = app.add_subcommand("logout", "Forget the token saved for this master URL");
  logout->callback([&g] {
    Status s = SaveToken(MasterUrl(g), "");
    if (!s.ok()) Finish(Fail("logout", s));
    fmt::print("logged out of {}\n", MasterUrl(g));
  });

  auto output = std::make_shared<std::string>("table");
  auto* whoami = app.add_subcommand(
      "whoami", "Who the token belongs to, their teams, and where jobs without --team go");
  AddOutputOption(whoami, *output);
  whoami->callback([&g, output] {
    WithClient(g, "whoami", [&](client::CohortClient& c) -> Status {
      COHORT_ASSIGN_OR_RETURN(Json me, c.WhoAmI());
      Print(me, *output, [&] {
        fmt::print("{}{}\nteams: {}\n", Text(me, "name"), me["admin"].get<bool>() ? " (admin)" : "",
                   TeamsText(me["teams"]));
        // Where `cohort run` without --team sends a job, and whether an admin chose it.
        if (me.value("job_team", Json()).is_string()) {
          fmt::print("jobs go to: {}{}\n", Text(me, "job_team"),
                     me.value("default_team", Json()).is_string() ? " (your default team)" : "");
        } else if (me.value("job_team_problem", Json()).is_string()) {
          fmt::print("jobs go to: none without --team: {}\n", Text(me, "job_team_problem"));
        }
      });
      return Status::Ok();
    });
  });
}

struct UserOptions {
  std::string name;
  bool admin = false;
  bool no_admin = false;
  std::vector<std::string> teams;
  int64_t uid = -1;
  int64_t gid = -1;
  bool clear_ids = false;
  std::string default_team;
  bool no_default_team = false;
  std::string output = "table";
};

void AddUser(CLI::App& app, GlobalOptions& g) {
  auto* user = app.add_subcommand("user", "Users (admins): create, list, change, delete");
  user->require_subcommand(1);

  auto list_output = std::make_shared<std::string>("table");
  auto* l = user->add_subcommand("list", "Every user, with teams and Unix ids");
  AddOutputOption(l, *list_output);
  l->callback([&g, list_output] {
    WithClient(g, "user list", [&](client::CohortClient& c) -> Status {
      COHORT_ASSIGN_OR_RETURN(Json doc, c.Users());
      Print(doc, *list_output, [&] { PrintUsers(doc["users"]); });
      return Status::Ok();
    });
  });

  auto create = std::make_shared<UserOptions>();
  auto* cr = user->add_subcommand(
      "create", "Create a user: cohort user create ada --team vision:member [--admin] [--uid N]");
  cr->add_option("USER", create->name, "User name (their tasks run as the Unix account so named)")
      ->required();
  cr->add_option("--team", create->teams,
                 "TEAM[:ROLE], repeatable; ROLE is viewer, member (default) or admin. Default: "
                 "a member of the default team");
  cr->add_flag("--admin", create->admin, "A cluster admin");
  cr->add_option("--uid", create->uid, "Run their tasks with this uid instead of the account's")
      ->check(CLI::NonNegativeNumber);
  cr->add_option("--gid", create->gid, "... and this gid")->check(CLI::NonNegativeNumber);
  AddOutputOption(cr, create->output);
  cr->callback([&g, create] {
    Json body{{"name", create->name}, {"admin", create->admin}};
    if (!create->teams.empty()) {
      body["teams"] = Json::object();
      for (const auto& t : create->teams) {
        auto tr = TeamAndRole(t);
        if (!tr.ok()) Finish(Fail("user create", tr.status()));
        body["teams"][tr->first] = tr->second;
      }
    }
    if (create->uid >= 0) body["uid"] = create->uid;
    if (create->gid >= 0) body["gid"] = create->gid;
    WithClient(g, "user create", [&](client::CohortClient& c) -> Status {
      COHORT_ASSIGN_OR_RETURN(Json u, c.CreateUser(body));
      Print(u, create->output, [&] {
        fmt::print(
            "user {} created (teams: {}); give them a token with: cohort token create "
            "--user {}\n",
            Text(u, "name"), TeamsText(u["teams"]), Text(u, "name"));
      });
      return Status::Ok();
    });
  });

  auto set = std::make_shared<UserOptions>();
  auto* s = user->add_subcommand(
      "set", "Change a user: --admin / --no-admin, --uid, --gid, --default-team");
  s->add_option("USER", set->name, "User name")->required();
  s->add_flag("--admin", set->admin, "Make them a cluster admin");
  s->add_flag("--no-admin", set->no_admin, "Take the cluster admin right away");
  s->add_option("--uid", set->uid, "Run their tasks with this uid")->check(CLI::NonNegativeNumber);
  s->add_option("--gid", set->gid, "... and this gid")->check(CLI::NonNegativeNumber);
  s->add_flag("--clear-ids", set->clear_ids, "Back to the Unix account named like the user");
  s->add_option("--default-team", set->default_team,
                "Where their jobs go when they name no team (one they are a member of); needed "
                "when they are in several teams");
  s->add_flag("--no-default-team", set->no_default_team,
              "Forget it: their jobs go to their one team, if they have one");
  AddOutputOption(s, set->output);
  s->callback([&g, set] {
    Json change = Json::object();
    if (set->admin) change["admin"] = true;
    if (set->no_admin) change["admin"] = false;
    if (set->clear_ids) change["uid"] = change["gid"] = nullptr;
    if (set->uid >= 0) change["uid"] = set->uid;
    if (set->gid >= 0) change["gid"] = set->gid;
    if (!set->default_team.empty()) change["default_team"] = set->default_team;
    if (set->no_default_team) change["default_team"] = nullptr;
    WithClient(g, "user set", [&](client::CohortClient& c) -> Status {
      COHORT_ASSIGN_OR_RETURN(Json u, c.UpdateUser(set->name, change));
      Print(u, set->output, [&] { PrintUsers(Json::array({u})); });
      return Status::Ok();
    });
  });

  auto name = std::make_shared<std::string>();
  auto* d = user->add_subcommand("delete", "Delete a user and revoke their tokens");
  d->add_option("USER", *name, "User name")->required();
  d->callback([&g, name] {
    WithClient(g, "user delete", [&](client::CohortClient& c) -> Status {
      COHORT_RETURN_IF_ERROR(c.DeleteUser(*name));
      fmt::print("user {} deleted; their tokens are revoked\n", *name);
      return Status::Ok();
    });
  });
}

struct TokenOptions {
  std::string user;
  std::string description;
  std::string expires;
  bool join = false;
  std::string output = "table";
};

void AddToken(CLI::App& app, GlobalOptions& g) {
  auto* token = app.add_subcommand("token", "API tokens: create (shown once), list, revoke");
  token->require_subcommand(1);

  auto create = std::make_shared<TokenOptions>();
  auto* cr = token->add_subcommand(
      "create", "Make a token for yourself, or (admins) for --user, or a --join token for agents");
  cr->add_option("--user", create->user, "Whose token (admins; default: yours)");
  cr->add_option("--description", create->description, "What it is for: laptop, ci, ...");
  cr->add_option("--expires", create->expires,
                 "Valid for this long: 12h, 30d (default: no expiry)");
  cr->add_flag("--join", create->join, "A join token, for agents to join the cluster (admins)");
  AddOutputOption(cr, create->output);
  cr->callback([&g, create] {
    Json body = Json::object();
    if (!create->user.empty()) body["user"] = create->user;
    if (!create->description.empty()) body["description"] = create->description;
    if (!create->expires.empty()) body["expires_in"] = create->expires;
    if (create->join) body["kind"] = "join";
    WithClient(g, "token create", [&](client::CohortClient& c) -> Status {
      COHORT_ASSIGN_OR_RETURN(Json t, c.CreateToken(body));
      Print(t, create->output, [&] {
        fmt::print("{}\n", Text(t, "token"));
        fmt::print(stderr, "token {} for {}{}: it is shown only now; {}\n", Text(t, "id"),
                   create->join ? "joining agents" : Text(t, "subject"),
                   t["expires_at"].is_null() ? "" : ", expires " + Text(t, "expires_at"),
                   create->join ? "give it to agents with --join-token-file"
                                : "log in with it: cohort login < file-with-the-token");
      });
      return Status::Ok();
    });
  });

  auto list = std::make_shared<TokenOptions>();
  auto* l = token->add_subcommand("list", "Your tokens (admins: everyone's, or --user's)");
  l->add_option("--user", list->user, "Only this user's");
  AddOutputOption(l, list->output);
  l->callback([&g, list] {
    WithClient(g, "token list", [&](client::CohortClient& c) -> Status {
      COHORT_ASSIGN_OR_RETURN(Json doc, c.Tokens(list->user));
      Print(doc, list->output, [&] { PrintTokens(doc["tokens"]); });
      return Status::Ok();
    });
  });

  auto id = std::make_shared<std::string>();
  auto* r = token->add_subcommand("revoke", "Revoke a token by its id (cohort token list)");
  r->add_option("ID", *id, "Token id")->required();
  r->callback([&g, id] {
    WithClient(g, "token revoke", [&](client::CohortClient& c) -> Status {
      COHORT_RETURN_IF_ERROR(c.RevokeToken(*id).status());
      fmt::print("token {} revoked\n", *id);
      return Status::Ok();
    });
  });
}

struct MemberOptions {
  std::string team;
  std::string user;
  std::string role = "member";
  std::string output = "table";
};

void AddMembers(CLI::App& app, GlobalOptions& g) {
  CLI::App* team = app.get_subcommand("team");
  auto add = std::make_shared<MemberOptions>();
  auto* a = team->add_subcommand("add-member",
                                 "Add a user to a team, or change their role (team admins)");
  a->add_option("TEAM", add->team, "Team")->required();
  a->add_option("USER", add->user, "User")->required();
  a->add_option("--role", add->role, "viewer, member or admin")
      ->check(CLI::IsMember({"viewer", "member", "admin"}))
      ->capture_default_str();
  a->callback([&g, add] {
    WithClient(g, "team add-member", [&](client::CohortClient& c) -> Status {
      COHORT_RETURN_IF_ERROR(c.SetMember(add->team, add->user, add->role).status());
      fmt::print("{} is now {} of team {}\n", add->user,
                 add->role == "admin" ? "an admin" : "a " + add->role, add->team);
      return Status::Ok();
    });
  });

  auto remove = std::make_shared<MemberOptions>();
  auto* r = team->add_subcommand("remove-member", "Take a user out of a team (team admins)");
  r->add_option("TEAM", remove->team, "Team")->required();
  r->add_option("USER", remove->user, "User")->required();
  r->callback([&g, remove] {
    WithClient(g, "team remove-member", [&](client::CohortClient& c) -> Status {
      COHORT_RETURN_IF_ERROR(c.RemoveMember(remove->team, remove->user).status());
      fmt::print("{} is no longer in team {}\n", remove->user, remove->team);
      return Status::Ok();
    });
  });

  auto list = std::make_shared<MemberOptions>();
  auto* m = team->add_subcommand("members", "A team's members and their roles");
  m->add_option("TEAM", list->team, "Team")->required();
  AddOutputOption(m, list->output);
  m->callback([&g, list] {
    WithClient(g, "team members", [&](client::CohortClient& c) -> Status {
      COHORT_ASSIGN_OR_RETURN(Json doc, c.Members(list->team));
      Print(doc, list->output, [&] {
        Table table({"USER", "ROLE"});
        for (const auto& member : doc["members"]) {
          table.Add({Text(member, "user"), Text(member, "role")});
        }
        table.Print(stdout);
      });
      return Status::Ok();
    });
  });
}

}  // namespace

void AddAuthCommands(CLI::App& app, GlobalOptions& g) {
  AddLogin(app, g);
  AddUser(app, g);
  AddToken(app, g);
  AddMembers(app, g);
}

}  // namespace cohort::cli
