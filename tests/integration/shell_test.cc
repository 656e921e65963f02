// Shell sessions end to end (issue 31, item 4): `cohort shell` in a real pseudo-terminal, a real
// master and agent, the session's task the agent's cohort-terminal. What a person at a terminal
// does: types, resizes the window, presses Ctrl-C, loses the connection and attaches again, and
// exits; and what a stranger may not do.
#include <fmt/format.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <chrono>
#include <thread>

#include "tests/integration/local_cluster.h"
#include "tests/integration/pty_cohort.h"

namespace cohort::testing {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;
using namespace std::chrono_literals;

// The id of the session `cohort shell` said it submitted.
JobId SessionId(const std::string& seen) {
  size_t at = seen.find("session ");
  if (at == std::string::npos) return 0;
  return std::atoll(seen.c_str() + at + 8);
}

// A token of a new Cohort user, whose tasks run as the account nobody.
std::string TokenOf(LocalCluster& cluster, const std::string& user) {
  auto created = cluster.client().CreateUser(Json{{"name", user}});
  EXPECT_TRUE(created.ok()) << created.status().ToString();
  auto mapped = cluster.client().UpdateUser(user, Json{{"uid", 65534}, {"gid", 65534}});
  EXPECT_TRUE(mapped.ok()) << mapped.status().ToString();
  auto token = cluster.client().CreateToken(Json{{"user", user}});
  EXPECT_TRUE(token.ok()) << token.status().ToString();
  return token.ok() ? (*token)["token"].get<std::string>() : "";
}

// The audit log's entries for attaches to `id`'s terminal: "STATUS USER", oldest first.
std::vector<std::string> TerminalAudit(LocalCluster& cluster, JobId id) {
  std::vector<std::string> out;
  auto log = cluster.client().Audit({{"limit", "100"}});
  EXPECT_TRUE(log.ok()) << log.status().ToString();
  if (!log.ok()) return out;
  for (const Json& e : (*log)["entries"]) {
    if (e.value("path", "") != fmt::format("/api/v1/jobs/{}/terminal", id)) continue;
    out.push_back(fmt::format("{} {}", e["status"].is_number() ? e["status"].get<int>() : 0,
                              e.value("user", "")));
  }
  std::sort(out.begin(), out.end());
  return out;
}

TEST(Shell, ATerminalThroughTheMasterWithResizeCtrlCAndReattachAfterADroppedConnection) {
  LocalCluster cluster("shell-attach");
  cluster.StartMaster();
  cluster.StartAgent("gpu-node", 2);
  PtyCohort shell(cluster, {"shell", "--gpus", "1", "--name", "mine"}, cluster.admin_token());
  ASSERT_TRUE(shell.WaitFor("attached to session")) << shell.seen();
  const JobId id = SessionId(shell.seen());
  ASSERT_GT(id, 0) << shell.seen();

  // The task's shell, on a terminal of this one's size and type, with its GPU.
  shell.Type("stty size; echo \"gpus=$CUDA_VISIBLE_DEVICES term=$TERM job=$COHORT_JOB_ID\"\r");
  EXPECT_TRUE(shell.WaitFor("30 100")) << shell.seen();
  EXPECT_TRUE(shell.WaitFor(fmt::format("term=xterm-256color job={}", id))) << shell.seen();
  EXPECT_THAT(shell.seen(), Not(HasSubstr("gpus=\"")));
  EXPECT_THAT(shell.seen(), Not(HasSubstr("COHORT_JOB_CREDENTIAL=")));

  // A resize of this window reaches the shell's terminal.
  shell.Resize(132, 43);
  std::this_thread::sleep_for(300ms);
  shell.Type("stty size\r");
  EXPECT_TRUE(shell.WaitFor("43 132")) << shell.seen();

  // Ctrl-C interrupts the shell's command, not the shell, nor `cohort shell`.
  shell.Type("sleep 60; echo slept-$((0))\r");
  std::this_thread::sleep_for(500ms);
  const auto interrupted = std::chrono::steady_clock::now();
  shell.Type("\x03");
  shell.Type("echo after-$((6*7))\r");
  EXPECT_TRUE(shell.WaitFor("after-42")) << shell.seen();
  EXPECT_LT(std::chrono::steady_clock::now() - interrupted, 20s);
  // Its output would be "slept-0"; the line typed says "slept-$((0))".
  EXPECT_THAT(shell.seen(), Not(HasSubstr("slept-0"))) << shell.seen();

  // The connection drops (the client is killed): the session and its shell run on.
  shell.Type("KEPT=value-42; echo set-$((1+1))\r");
  ASSERT_TRUE(shell.WaitFor("set-2")) << shell.seen();
  shell.Kill();
  std::this_thread::sleep_for(1s);
  EXPECT_EQ(cluster.client().GetJob(id)->state, JobState::kRunning);

  PtyCohort again(cluster, {"shell", "--attach", std::to_string(id)}, cluster.admin_token());
  ASSERT_TRUE(again.WaitFor("attached to session")) << again.seen();
  // The last of what it wrote comes first, then the same shell answers.
  EXPECT_TRUE(again.WaitFor("set-2")) << again.seen();
  again.Type("echo kept=$KEPT\r");
  EXPECT_TRUE(again.WaitFor("kept=value-42")) << again.seen();

  // Its exit ends the session, whose job succeeds, and `cohort shell` with its status.
  again.Type("exit\r");
  EXPECT_EQ(again.WaitExit(), 0) << again.seen();
  Job ended = cluster.WaitForState(id, JobState::kSucceeded);
  EXPECT_EQ(ended.attempt, 1);
  const std::string admin = "101 " + TestAccount();
  EXPECT_EQ(TerminalAudit(cluster, id), (std::vector<std::string>{admin, admin}));
}

// A node that goes silent (frozen, partitioned: its sockets say nothing) is lost, the session
// with it, and the master closes its terminals with a word: `cohort shell` does not wait on a
// dead connection.
TEST(Shell, WhenItsNodeFreezesTheSessionEndsAndItsTerminalIsToldAndClosed) {
  LocalCluster cluster("shell-frozen-node");
  cluster.StartMaster({"--node-timeout", "3s"});
  cluster.StartAgent("gpu-node", 1);
  PtyCohort shell(cluster, {"shell", "--gpus", "1"}, cluster.admin_token());
  ASSERT_TRUE(shell.WaitFor("attached to session")) << shell.seen();
  const JobId id = SessionId(shell.seen());
  shell.Type("echo alive-$((40+2))\r");
  ASSERT_TRUE(shell.WaitFor("alive-42")) << shell.seen();
  cluster.FreezeMachine("gpu-node");
  Job ended = cluster.WaitForJob(
      id, [](const Job& j) { return IsTerminal(j.state); }, std::chrono::seconds(30));
  EXPECT_TRUE(IsTerminal(ended.state)) << JobStateName(ended.state);
  EXPECT_TRUE(
      shell.WaitFor(fmt::format("session {} has ended ({})", id, JobStateName(ended.state))))
      << shell.seen();
  EXPECT_NE(shell.WaitExit(std::chrono::seconds(10)), -1) << "cohort shell is not left waiting";
  cluster.KillMachine("gpu-node");
}

TEST(Shell, OnlyItsOwnerAndAdminsMayAttachAndEveryTryIsAudited) {
  LocalCluster cluster("shell-access");
  cluster.StartMaster();
  cluster.StartAgent("gpu-node", 1);
  const std::string ada = TokenOf(cluster, "ada");
  const std::string bob = TokenOf(cluster, "bob");
  PtyCohort shell(cluster, {"shell", "--gpus", "0", "--cpus", "0.1"}, ada);
  ASSERT_TRUE(shell.WaitFor("attached to session")) << shell.seen();
  const JobId id = SessionId(shell.seen());
  // $((...)): what the shell prints is not what it echoes of the line typed.
  shell.Type("echo ada-$((40+2))\r");
  ASSERT_TRUE(shell.WaitFor("ada-42")) << shell.seen();

  PtyCohort stranger(cluster, {"shell", "--attach", std::to_string(id)}, bob);
  EXPECT_EQ(stranger.WaitExit(), 1);
  EXPECT_THAT(stranger.seen(),
              HasSubstr(fmt::format("user bob may not attach to session {} of user ada", id)));

  // An admin may (and takes the terminal over: ada's is told).
  PtyCohort admin(cluster, {"shell", "--attach", std::to_string(id)}, cluster.admin_token());
  ASSERT_TRUE(admin.WaitFor("attached to session")) << admin.seen();
  EXPECT_TRUE(shell.WaitFor("attached from another terminal")) << shell.seen();
  admin.Type("echo admin-$((6*7))\r");
  EXPECT_TRUE(admin.WaitFor("admin-42")) << admin.seen();

  const auto audit = TerminalAudit(cluster, id);
  std::vector<std::string> expected = {"101 " + TestAccount(), "101 ada", "403 bob"};
  std::sort(expected.begin(), expected.end());
  EXPECT_EQ(audit, expected);

  // Without the upgrade, the route says what it wants; a job that is no session has no terminal.
  auto http = cluster.Http(ada);
  ASSERT_TRUE(http.ok());
  auto plain = (*http)->Request("GET", fmt::format("/api/v1/jobs/{}/terminal", id));
  ASSERT_TRUE(plain.ok());
  EXPECT_EQ(plain->status, 400);
  EXPECT_THAT(plain->body, HasSubstr("Upgrade: cohort-terminal"));
  JobId batch = cluster.Submit(R"(
name: batch
tasks: [{role: main, resources: {gpus: 0, cpus: 0.1}, command: [sleep, "60"]}]
)");
  cluster.WaitForState(batch, JobState::kRunning);
  PtyCohort not_a_session(cluster, {"shell", "--attach", std::to_string(batch)},
                          cluster.admin_token());
  EXPECT_EQ(not_a_session.WaitExit(), 1);
  EXPECT_THAT(not_a_session.seen(), HasSubstr("is not a shell session"));
}

// Over HTTPS the terminal is the TLS connection switched: bytes the TLS layer holds already
// are read before waiting on the socket.
TEST(Shell, ATerminalOverTls) {
  LocalCluster cluster("shell-tls", LocalClusterOptions{.tls = true});
  cluster.StartMaster();
  cluster.StartAgent("gpu-node", 1);
  PtyCohort shell(cluster, {"shell", "--gpus", "1", "--cpus", "0.1"}, cluster.admin_token());
  ASSERT_TRUE(shell.WaitFor("attached to session")) << shell.seen();
  EXPECT_THAT(cluster.url(), ::testing::StartsWith("https://"));
  for (int i = 0; i < 3; ++i) {
    shell.Type(fmt::format("echo tls-$((100+{}))\r", i));
    EXPECT_TRUE(shell.WaitFor(fmt::format("tls-{}", 100 + i))) << shell.seen();
  }
  shell.Type("exit 7\r");
  EXPECT_EQ(shell.WaitExit(), 7) << shell.seen();
}

TEST(Shell, BadSessionOptionsAreRefusedBeforeAnythingRuns) {
  LocalCluster cluster("shell-options");
  cluster.StartMaster();
  auto bad_timeout = cluster.Cohort({"shell", "--idle-timeout", "soon"});
  EXPECT_EQ(bad_timeout.exit_code, 1);
  EXPECT_THAT(bad_timeout.err, HasSubstr("session.idle_timeout: must be a duration"));
  auto bad_image = cluster.Cohort({"shell", "--image", "Not A Reference"});
  EXPECT_EQ(bad_image.exit_code, 1);
  EXPECT_THAT(bad_image.err, HasSubstr("tasks[0].image"));
}

}  // namespace
}  // namespace cohort::testing
