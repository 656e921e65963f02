// Users, tokens and agents' credentials against real daemons (docs/security.md): the first
// start's files, login, who may kill whose job, forged agent calls, revocation, and that no
// token reaches a log.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <sys/stat.h>

#include <filesystem>
#include <thread>

#include "common/strings.h"
#include "model/json.h"
#include "os/durable_file.h"
#include "os/process.h"
#include "tests/integration/local_cluster.h"

namespace cohort::testing {
namespace {

using ::testing::HasSubstr;

int ModeOf(const std::string& path) {
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) return -1;
  return static_cast<int>(st.st_mode & 0777);
}

// The CLI as a user with only what they typed: their own config directory, no token from the
// environment.
CommandResult As(LocalCluster& cluster, const std::string& home, const std::string& command) {
  // In an empty directory: `cohort run` sends the one it runs in as the job's code.
  const std::string cwd = cluster.dir() + "/cwd-" + home;
  std::filesystem::create_directories(cwd);
  return RunCommand({"/bin/sh", "-c", command},
                    {{"COHORT_MASTER", cluster.url()},
                     {"COHORT_TOKEN", ""},
                     {"XDG_CONFIG_HOME", cluster.dir() + "/" + home},
                     {"PATH", BinDir() + ":/usr/bin:/bin"}},
                    cwd);
}

TEST(Auth, UsersLogInAndTouchOnlyWhatTheirRolesAllow) {
  LocalCluster cluster("auth");
  cluster.StartMaster();
  cluster.StartAgent("node-a", 2);
  const std::string data = cluster.dir() + "/master";
  // The first start's files: only the master's account reads them.
  EXPECT_EQ(ModeOf(data + "/admin-token"), 0600);
  EXPECT_EQ(ModeOf(data + "/join-token"), 0600);
  EXPECT_EQ(ModeOf(data + "/cohort.db"), 0600);
  EXPECT_EQ(ModeOf(data + "/metrics.db"), 0600);
  EXPECT_EQ(ModeOf(data), 0711);
  // The agent writes its credential once its join is answered, which StartAgent does not wait for.
  const std::string credential = cluster.AgentDir("node-a") + "/credential";
  EXPECT_TRUE(WaitFor([&] { return ModeOf(credential) != -1; }, std::chrono::seconds(10)));
  EXPECT_EQ(ModeOf(credential), 0600);

  // Without a token, the CLI says what to do.
  auto anonymous = As(cluster, "nobody", "cohort jobs");
  EXPECT_EQ(anonymous.exit_code, 1);
  EXPECT_THAT(anonymous.err, HasSubstr("cohort login"));

  // The admin makes two users and a token for each. ada has no Unix account on this machine:
  // the admin maps her to nobody's uid and gid, which her tasks then run as.
  ASSERT_EQ(cluster.Cohort({"user", "create", "ada", "--uid", "65534", "--gid", "65534"}).exit_code,
            0);
  ASSERT_EQ(cluster.Cohort({"team", "set", "nlp", "--gpus", "0"}).exit_code, 0);
  ASSERT_EQ(cluster.Cohort({"user", "create", "mallory", "--team", "nlp"}).exit_code, 0);
  auto ada_token = cluster.Cohort({"token", "create", "--user", "ada", "--expires", "1d"});
  ASSERT_EQ(ada_token.exit_code, 0) << ada_token.err;
  auto mallory_token = cluster.Cohort({"token", "create", "--user", "mallory"});
  ASSERT_EQ(mallory_token.exit_code, 0) << mallory_token.err;
  std::string ada(Trim(ada_token.out)), mallory(Trim(mallory_token.out));

  // ada logs in; the token is kept 0600 and found by every later command.
  auto login = As(cluster, "ada", "echo " + ada + " | cohort login");
  ASSERT_EQ(login.exit_code, 0) << login.err;
  EXPECT_THAT(login.out, HasSubstr("as ada"));
  EXPECT_EQ(ModeOf(cluster.dir() + "/ada/cohort/credentials.json"), 0600);
  auto run = As(cluster, "ada", "cohort run --gpus 1 -- sleep 300");
  ASSERT_EQ(run.exit_code, 0) << run.err;
  JobId id = std::stoll(std::string(Trim(run.out)));
  EXPECT_EQ(cluster.client().GetJob(id)->user, "ada");
  // It runs: as uid 65534, which the agent was told (run_as_test checks the ids themselves).
  cluster.WaitForState(id, JobState::kRunning);

  // mallory, of another team, sees the job, not what it runs, and cannot kill it.
  ASSERT_EQ(As(cluster, "mallory", "echo " + mallory + " | cohort login").exit_code, 0);
  auto seen = As(cluster, "mallory", "cohort jobs -o json");
  ASSERT_EQ(seen.exit_code, 0) << seen.err;
  EXPECT_THAT(seen.out, HasSubstr("\"user\": \"ada\""));
  EXPECT_THAT(seen.out, HasSubstr("(hidden)"));
  EXPECT_THAT(seen.out, ::testing::Not(HasSubstr("\"300\"")));
  auto kill = As(cluster, "mallory", "cohort kill " + std::to_string(id));
  EXPECT_EQ(kill.exit_code, 1);
  EXPECT_THAT(kill.err, HasSubstr("user mallory may not kill job"));
  EXPECT_NE(cluster.client().GetJob(id)->state, JobState::kKilled);
  auto logs = As(cluster, "mallory", "cohort logs " + std::to_string(id));
  EXPECT_EQ(logs.exit_code, 1);
  EXPECT_THAT(logs.err, HasSubstr("may not read job"));

  // Forged agent calls: no token, a user's token, the admin's.
  std::string report = R"({"applied_version": 1, "tasks": []})";
  for (const std::string& token : {std::string("none"), mallory, cluster.admin_token()}) {
    auto http = client::HttpClient::Create(cluster.url());
    ASSERT_TRUE(http.ok());
    if (token != "none") (*http)->SetHeader("Authorization", "Bearer " + token);
    auto sync = (*http)->Request("POST", "/api/v1/agents/node-a/sync", report);
    ASSERT_TRUE(sync.ok());
    EXPECT_EQ(sync->status, token == "none" ? 401 : 403) << sync->body;
    auto hijack = (*http)->Request("POST", "/api/v1/agents/register",
                                   R"({"id": "node-a", "address": "6.6.6.6"})");
    EXPECT_EQ(hijack->status, token == "none" ? 401 : 403) << hijack->body;
  }
  EXPECT_EQ(cluster.client().GetJob(id)->state, JobState::kRunning);

  // ada kills her own job; once her token is revoked, she is refused.
  EXPECT_EQ(As(cluster, "ada", "cohort kill " + std::to_string(id)).exit_code, 0);
  cluster.WaitForState(id, JobState::kKilled);
  std::string ada_id = ada.substr(4, 16);
  ASSERT_EQ(cluster.Cohort({"token", "revoke", ada_id}).exit_code, 0);
  auto revoked = As(cluster, "ada", "cohort jobs");
  EXPECT_EQ(revoked.exit_code, 1);
  EXPECT_THAT(revoked.err, HasSubstr("revoked"));

  // No token, credential or join token ever reaches a daemon's log.
  std::vector<std::string> secrets = {
      ada, mallory, cluster.admin_token(), cluster.join_token(),
      std::string(Trim(ReadFileOrEmpty(cluster.AgentDir("node-a") + "/credential")))};
  for (const char* log : {"master.log", "node-a.log"}) {
    std::string text = ReadFileOrEmpty(cluster.dir() + "/" + log);
    EXPECT_FALSE(text.empty());
    for (const auto& secret : secrets) {
      ASSERT_FALSE(secret.empty());
      EXPECT_EQ(text.find(secret.substr(21)), std::string::npos) << log;
    }
  }
}

TEST(Auth, GuessesFromTheAgentsOwnAddressLockOutNoOne) {
  LocalCluster cluster("auth-guess");
  cluster.StartMaster();
  for (const char* node : {"node-a", "node-b"}) cluster.StartAgent(node, 1);
  // A task on a GPU node guesses tokens: 5 a second for a minute, from the address its agent
  // (and here the user) calls from too.
  auto guesser =
      client::CohortClient::Create(cluster.url(), "coh_0123456789abcdef_" + std::string(43, 'x'));
  ASSERT_TRUE(guesser.ok());
  int refused = 0, held_back = 0, other = 0, user_failures = 0;
  JobId id = cluster.Submit(R"(
name: steady
tasks:
  - role: worker
    replicas: 2
    resources: {gpus: 1}
    command: [sleep, "70"]
)");
  cluster.WaitForState(id, JobState::kRunning);
  auto until = std::chrono::steady_clock::now() + std::chrono::seconds(60);
  while (std::chrono::steady_clock::now() < until) {
    for (int i = 0; i < 5; ++i) {
      auto who = (*guesser)->WhoAmI();
      StatusCode code = who.status().code();
      if (code == StatusCode::kUnauthenticated)
        ++refused;
      else if (code == StatusCode::kTooManyRequests)
        ++held_back;
      else
        ++other;
    }
    // The user keeps working, and the agents keep syncing, from the same address.
    if (!cluster.client().WhoAmI().ok()) ++user_failures;
    std::this_thread::sleep_for(std::chrono::milliseconds(1000));
  }
  EXPECT_EQ(other, 0) << "a guess was never taken";
  EXPECT_GT(refused + held_back, 250);
  EXPECT_GT(held_back, 0) << "guesses are slowed once past the burst";
  EXPECT_EQ(user_failures, 0);
  auto nodes = cluster.client().Nodes();
  ASSERT_TRUE(nodes.ok());
  for (const auto& n : (*nodes)["nodes"]) EXPECT_EQ(n["state"], "READY") << n.dump();
  Job job = cluster.WaitForState(id, JobState::kSucceeded, std::chrono::seconds(30));
  EXPECT_EQ(job.attempt, 1);
  // Logged in aggregate: a line per address every 10 s or so, not one per guess.
  std::string log = ReadFileOrEmpty(cluster.dir() + "/master.log");
  int lines = 0;
  for (size_t at = 0; (at = log.find("since the last report", at)) != std::string::npos; ++at) {
    ++lines;
  }
  EXPECT_GE(lines, 1);
  EXPECT_LE(lines, 10) << "refusals logged one by one";
}

TEST(Auth, AnAgentWithoutTheJoinTokenCannotJoinAndARemovedNodeJoinsAgain) {
  LocalCluster cluster("auth-join");
  cluster.StartMaster();
  // An agent started without --join-token-file keeps trying, and says why it cannot join.
  auto rogue = RunCommand(
      {"/usr/bin/timeout", "3", BinDir() + "/cohortd", "agent", "--master", cluster.url(), "--name",
       "rogue", "--data-dir", cluster.dir() + "/rogue", "--gpus", "1", "--log-level", "info"},
      {{"COHORT_JOIN_TOKEN", ""}});
  EXPECT_EQ(rogue.exit_code, 124);  // still trying when timeout stopped it
  EXPECT_THAT(rogue.err, HasSubstr("no credential and no join token"));
  EXPECT_TRUE((*cluster.client().Nodes())["nodes"].empty());

  cluster.StartAgent("node-a", 1);
  std::string first = ReadFileOrEmpty(cluster.AgentDir("node-a") + "/credential");
  ASSERT_EQ(cluster.Cohort({"node", "remove", "node-a"}).exit_code, 0);
  // Its credential is revoked; the agent joins again with the join token, with a new one.
  ASSERT_TRUE(WaitFor([&] {
    auto nodes = cluster.client().Nodes();
    return nodes.ok() && !(*nodes)["nodes"].empty() && (*nodes)["nodes"][0]["state"] == "READY";
  }));
  ASSERT_TRUE(WaitFor(
      [&] { return ReadFileOrEmpty(cluster.AgentDir("node-a") + "/credential") != first; }));
}

// Issue 27, item 3: a second user just works. The admin makes a team and a user in it; that
// user's `cohort run` without --team lands in the team; one who may submit nowhere is told what
// to ask the admin for; one in two teams is told how to choose, until the admin sets a default.
// Who killed the job is in its events and in `cohort audit --job`.
TEST(Auth, ASecondUsersJobsGoToTheirTeam) {
  LocalCluster cluster("second-user");
  cluster.StartMaster();
  cluster.StartAgent("node-a", 2);
  ASSERT_EQ(cluster.Cohort({"team", "set", "vision", "--gpus", "1"}).exit_code, 0);
  ASSERT_EQ(cluster.Cohort({"team", "set", "nlp", "--gpus", "0"}).exit_code, 0);
  ASSERT_EQ(
      cluster
          .Cohort({"user", "create", "ada", "--team", "vision", "--uid", "65534", "--gid", "65534"})
          .exit_code,
      0);
  ASSERT_EQ(cluster.Cohort({"user", "create", "vic", "--team", "vision:viewer"}).exit_code, 0);
  auto login = [&](const std::string& user) {
    auto token = cluster.Cohort({"token", "create", "--user", user});
    ASSERT_EQ(token.exit_code, 0) << token.err;
    auto in = As(cluster, user, "echo " + std::string(Trim(token.out)) + " | cohort login");
    ASSERT_EQ(in.exit_code, 0) << in.err;
  };
  login("ada");
  login("vic");

  auto whoami = As(cluster, "ada", "cohort whoami");
  ASSERT_EQ(whoami.exit_code, 0) << whoami.err;
  EXPECT_THAT(whoami.out, HasSubstr("jobs go to: vision"));
  auto run = As(cluster, "ada", "cohort run --gpus 1 -- sleep 60");
  ASSERT_EQ(run.exit_code, 0) << run.err;
  JobId id = std::stoll(std::string(Trim(run.out)));
  EXPECT_EQ(cluster.client().GetJob(id)->spec.team, "vision");

  auto refused = As(cluster, "vic", "cohort run --gpus 1 -- sleep 60");
  EXPECT_EQ(refused.exit_code, 1);
  EXPECT_THAT(refused.err, HasSubstr("ask an admin to add you to one (cohort team add-member "
                                     "TEAM vic)"));

  // In two teams: choose, or have the admin choose.
  ASSERT_EQ(cluster.Cohort({"team", "add-member", "nlp", "ada"}).exit_code, 0);
  auto two = As(cluster, "ada", "cohort run -- true");
  EXPECT_EQ(two.exit_code, 1);
  EXPECT_THAT(two.err, HasSubstr("cohort user set ada --default-team nlp"));
  auto set = cluster.Cohort({"user", "set", "ada", "--default-team", "nlp", "-o", "json"});
  ASSERT_EQ(set.exit_code, 0) << set.err;
  EXPECT_THAT(set.out, HasSubstr("\"default_team\": \"nlp\""));
  auto me = As(cluster, "ada", "cohort whoami -o json");
  ASSERT_EQ(me.exit_code, 0) << me.err;
  EXPECT_THAT(me.out, HasSubstr("\"job_team\": \"nlp\""));
  auto nlp = As(cluster, "ada", "cohort run -- true");
  ASSERT_EQ(nlp.exit_code, 0) << nlp.err;
  EXPECT_EQ(cluster.client().GetJob(std::stoll(std::string(Trim(nlp.out))))->spec.team, "nlp");
  // A spec file that names no team goes there too, as with `cohort run`, not to "default".
  const std::string spec_file = cluster.dir() + "/no-team.json";
  ASSERT_TRUE(WriteFileAtomically(spec_file,
                                  R"({"name": "t", "tasks": [{"role": "w", "command": ["true"]}]})")
                  .ok());
  auto submitted = As(cluster, "ada", "cohort submit " + spec_file);
  ASSERT_EQ(submitted.exit_code, 0) << submitted.err;
  EXPECT_EQ(cluster.client().GetJob(std::stoll(std::string(Trim(submitted.out))))->spec.team,
            "nlp");

  // The admin kills ada's first job: its events and the audit say who.
  auto admin_doc = ParseJson(cluster.Cohort({"whoami", "-o", "json"}).out);
  ASSERT_TRUE(admin_doc.ok());
  const std::string admin = (*admin_doc)["name"].get<std::string>();
  ASSERT_EQ(cluster.Cohort({"kill", std::to_string(id)}).exit_code, 0);
  cluster.WaitForState(id, JobState::kKilled);
  EXPECT_THAT(cluster.EventsText(id), HasSubstr("killed by user " + admin));
  auto audit = cluster.Cohort({"audit", "--job", std::to_string(id), "-o", "json"});
  ASSERT_EQ(audit.exit_code, 0) << audit.err;
  auto doc = ParseJson(audit.out);
  ASSERT_TRUE(doc.ok()) << audit.out;
  std::vector<std::string> calls;
  for (const auto& e : (*doc)["entries"]) {
    calls.push_back(e["user"].get<std::string>() + " " + e["path"].get<std::string>());
  }
  EXPECT_EQ(calls,
            (std::vector<std::string>{"ada /api/v1/jobs",
                                      admin + " /api/v1/jobs/" + std::to_string(id) + "/kill"}));
}

}  // namespace
}  // namespace cohort::testing
