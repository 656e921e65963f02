// Tasks run as their user (docs/security.md): two real Unix accounts, A and B, a job of each on
// one node, and what A's task can do to B's. Creating accounts needs root, as CI runs the tests;
// skipped otherwise.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <pwd.h>
#include <sys/stat.h>
#include <unistd.h>

#include <fmt/format.h>

#include <filesystem>
#include <random>

#include "common/strings.h"
#include "os/durable_file.h"
#include "os/process.h"
#include "tests/integration/local_cluster.h"

namespace cohort::testing {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

std::string RandomSuffix() {
  std::random_device random;
  return fmt::format("{:06x}", random() & 0xffffff);
}

// A Unix account made for one test (with its own group, and optionally in one more), removed
// with it.
class TestUser {
 public:
  explicit TestUser(const std::string& name, const std::string& extra_group = "") : name_(name) {
    std::vector<std::string> args = {"/usr/sbin/useradd", "--no-create-home", "--home-dir",
                                     "/nonexistent",      "--shell",          "/usr/sbin/nologin",
                                     "--user-group"};
    if (!extra_group.empty()) {
      args.push_back("--groups");
      args.push_back(extra_group);
    }
    args.push_back(name);
    auto r = RunCommand(args);
    EXPECT_EQ(r.exit_code, 0) << "useradd " << name << ": " << r.err;
    const passwd* pw = ::getpwnam(name.c_str());
    EXPECT_NE(pw, nullptr) << name;
    if (pw) {
      uid_ = pw->pw_uid;
      gid_ = pw->pw_gid;
    }
  }
  ~TestUser() {
    // Its tasks are being killed as the cluster goes: userdel refuses while any is alive.
    CommandResult r;
    bool gone = WaitFor(
        [&] {
          r = RunCommand({"/usr/sbin/userdel", name_});
          return r.exit_code == 0;
        },
        std::chrono::seconds(10));
    EXPECT_TRUE(gone) << "userdel " << name_ << ": " << r.err;
  }
  const std::string& name() const { return name_; }
  uid_t uid() const { return uid_; }
  gid_t gid() const { return gid_; }

 private:
  std::string name_;
  uid_t uid_ = 0;
  gid_t gid_ = 0;
};

class TestGroup {
 public:
  explicit TestGroup(const std::string& name) : name_(name) {
    auto r = RunCommand({"/usr/sbin/groupadd", name});
    EXPECT_EQ(r.exit_code, 0) << "groupadd " << name << ": " << r.err;
  }
  ~TestGroup() {
    auto r = RunCommand({"/usr/sbin/groupdel", name_});
    EXPECT_EQ(r.exit_code, 0) << "groupdel " << name_ << ": " << r.err;
  }
  const std::string& name() const { return name_; }

 private:
  std::string name_;
};

// A token of the Cohort user of that name, made by the admin on first use (a member of the
// default team).
std::string TokenOf(LocalCluster& cluster, const std::string& user) {
  auto created = cluster.client().CreateUser(Json{{"name", user}});
  EXPECT_TRUE(created.ok() || created.status().code() == StatusCode::kAlreadyExists)
      << created.status().ToString();
  auto token = cluster.client().CreateToken(Json{{"user", user}});
  EXPECT_TRUE(token.ok()) << token.status().ToString();
  return token.ok() ? (*token)["token"].get<std::string>() : "";
}

JobId SubmitWith(LocalCluster& cluster, const std::string& token, const std::string& spec) {
  auto client = client::CohortClient::Create(cluster.url(), token);
  EXPECT_TRUE(client.ok());
  if (!client.ok()) return 0;
  auto job = (*client)->Submit(spec);
  EXPECT_TRUE(job.ok()) << job.status().ToString();
  return job.ok() ? job->id : 0;
}

// The one place that chooses who a job belongs to: the Cohort user of that name.
JobId SubmitAs(LocalCluster& cluster, const std::string& user, const std::string& spec) {
  return SubmitWith(cluster, TokenOf(cluster, user), spec);
}

struct stat Stat(const std::string& path) {
  struct stat st {};
  EXPECT_EQ(::lstat(path.c_str(), &st), 0) << path;
  return st;
}

// "Uid:\t1000\t1000\t1000\t1000" of /proc/<pid>/status: the real uid.
uid_t ProcessUid(pid_t pid) {
  for (const auto& line : Split(ReadFileOrEmpty(fmt::format("/proc/{}/status", pid)), '\n')) {
    if (line.starts_with("Uid:")) {
      return static_cast<uid_t>(std::atoi(std::string(Trim(line.substr(4))).c_str()));
    }
  }
  return static_cast<uid_t>(-1);
}

// A's probes of B's task: each prints "<what>: allowed", or the reason it was not.
constexpr const char* kProbe = R"sh(
probe() { what=$1; shift; if err=$("$@" 2>&1 >/dev/null); then echo "$what: allowed"; else echo "$what: ${err##*: }"; fi; }
echo "ids $(id -u) $(id -g) groups $(id -G)"
grep NoNewPrivs /proc/self/status
echo "home $HOME user $USER logname $LOGNAME"
probe "list B's task directory" ls "$2"
probe "read B's spec" cat "$2/spec.json"
probe "read B's output" cat "$2/output.log"
probe "list B's scratch directory" ls "$2/work"
probe "list B's checkpoints" ls "$3"
probe "write in B's checkpoints" touch "$3/planted"
probe "list B's outputs" ls "$4"
probe "signal B's task" kill -KILL "$1"
probe "read B's environment" cat "/proc/$1/environ"
probe "read B's command line" cat "/proc/$1/cmdline"
probe "see B's task in /proc" ls -d "/proc/$1"
probe "see its supervisor in /proc" ls -d "/proc/$PPID"
probe "read its own command line" cat "/proc/$$/cmdline"
probe "write its own checkpoints" touch "$COHORT_CHECKPOINT_DIR/mine"
probe "write its own scratch directory by its path" touch "$(pwd)/mine"
)sh";

TEST(RunAs, ATaskRunsAsItsUserAndCannotTouchAnotherUsersTask) {
  if (::geteuid() != 0) GTEST_SKIP() << "creating Unix accounts needs root";
  std::string suffix = RandomSuffix();
  // Before the cluster, so that they outlive its tasks.
  TestGroup team("cohort-t-g-" + suffix);
  TestUser a("cohort-t-a-" + suffix, team.name());
  TestUser b("cohort-t-b-" + suffix);
  LocalCluster cluster("run-as");
  cluster.StartMaster({"--storage-root", cluster.dir() + "/storage"});
  cluster.StartAgent("node-1", 0);

  JobId job_b = SubmitAs(cluster, b.name(), R"(
name: b-secret
tasks:
  - role: main
    command: [/bin/sh, -c, "echo ready; exec sleep 600"]
    env: {SECRET: b-secret-7f3a}
)");
  Job running_b = cluster.WaitForJob(job_b, [](const Job& j) {
    return j.state == JobState::kRunning && !j.tasks.empty() && j.tasks[0].pid > 0;
  });
  ASSERT_EQ(running_b.state, JobState::kRunning) << running_b.message;
  ASSERT_TRUE(WaitFor([&] { return cluster.Logs(job_b).find("ready") != std::string::npos; }));
  pid_t pid_b = static_cast<pid_t>(running_b.tasks[0].pid);
  std::string dir_b =
      cluster.AgentDir("node-1") + "/tasks/" + TaskId{job_b, 1, "main", 0}.ToString();
  std::string storage_b = fmt::format("{}/storage/jobs/{}", cluster.dir(), job_b);
  // Its checkpoints are kept on its node, and follow it through the store (docs/data.md).
  std::string node_jobs = cluster.AgentDir("node-1") + "/jobs";
  std::string checkpoints_b = fmt::format("{}/{}/checkpoints", node_jobs, job_b);

  JobId job_a = SubmitAs(
      cluster, a.name(),
      fmt::format(R"(
name: a-probes
tasks:
  - role: main
    command: [/bin/sh, -c, {}, probe, "{}", "{}", "{}", "{}"]
    env: {{LC_ALL: C}}
restart: {{max_attempts: 1}}
)",
                  Json(kProbe).dump(), pid_b, dir_b, checkpoints_b, storage_b + "/outputs"));
  Job done_a = cluster.WaitForState(job_a, JobState::kSucceeded);
  std::string out = cluster.Logs(job_a);
  EXPECT_EQ(out, fmt::format("ids {} {} groups {}\n"
                             "NoNewPrivs:\t1\n"
                             "home /nonexistent user {} logname {}\n"
                             "list B's task directory: Permission denied\n"
                             "read B's spec: Permission denied\n"
                             "read B's output: Permission denied\n"
                             "list B's scratch directory: Permission denied\n"
                             "list B's checkpoints: Permission denied\n"
                             "write in B's checkpoints: Permission denied\n"
                             "list B's outputs: Permission denied\n"
                             "signal B's task: Operation not permitted\n"
                             "read B's environment: No such file or directory\n"
                             "read B's command line: No such file or directory\n"
                             "see B's task in /proc: No such file or directory\n"
                             "see its supervisor in /proc: No such file or directory\n"
                             "read its own command line: allowed\n"
                             "write its own checkpoints: allowed\n"
                             "write its own scratch directory by its path: allowed\n",
                             a.uid(), a.gid(), a.gid(), a.name(), a.name()));
  EXPECT_THAT(out, Not(HasSubstr("b-secret-7f3a")));

  // B's task is untouched, runs as B, under a supervisor that stayed root.
  EXPECT_TRUE(ProcessAlive(pid_b));
  EXPECT_EQ(cluster.client().GetJob(job_b)->state, JobState::kRunning);
  EXPECT_EQ(ProcessUid(pid_b), b.uid());
  EXPECT_EQ(ProcessUid(ReadPidFile(dir_b + "/supervisor.pid")), 0u);
  EXPECT_THAT(ReadFileOrEmpty(fmt::format("/proc/{}/environ", pid_b)), HasSubstr("b-secret-7f3a"))
      << "root reads it: the secret was there to be hidden";

  // The modes behind it, as docs/security.md lists them.
  struct Expected {
    std::string path;
    uid_t uid;
    mode_t mode;
  };
  for (const Expected& e : std::vector<Expected>{
           {cluster.AgentDir("node-1"), 0, 0711},
           {cluster.AgentDir("node-1") + "/tasks", 0, 0711},
           {dir_b, 0, 0711},
           {dir_b + "/spec.json", 0, 0600},
           {dir_b + "/supervisor.pid", 0, 0600},
           {dir_b + "/supervisor.log", 0, 0600},
           {dir_b + "/task.pid", 0, 0600},
           {dir_b + "/work", b.uid(), 0700},
           {dir_b + "/output.log", b.uid(), 0600},
           {node_jobs, 0, 0711},
           {fmt::format("{}/{}", node_jobs, job_b), 0, 0711},
           {checkpoints_b, b.uid(), 0700},
           {storage_b + "/outputs", b.uid(), 0750},
           {storage_b + "/logs", b.uid(), 0700},
       }) {
    struct stat st = Stat(e.path);
    EXPECT_EQ(st.st_uid, e.uid) << e.path;
    EXPECT_EQ(st.st_mode & 07777, e.mode) << e.path;
  }
  EXPECT_EQ(Stat(storage_b + "/outputs").st_gid, b.gid()) << "B's group may read B's outputs";
  EXPECT_FALSE(std::filesystem::exists(checkpoints_b + "/planted"));

  ASSERT_TRUE(cluster.client().Kill(job_b).ok());
  cluster.WaitForState(job_b, JobState::kKilled);
}

// A job's datasets and code as its own account sees them: the dataset readable and not
// changeable, the node's cache not listable, the code its own to change.
TEST(RunAs, ATaskReadsItsDatasetButCannotChangeItAndOwnsItsCode) {
  if (::geteuid() != 0) GTEST_SKIP() << "creating Unix accounts needs root";
  TestUser a("cohort-t-d-" + RandomSuffix());
  LocalCluster cluster("run-as-data");
  cluster.StartMaster();
  cluster.StartAgent("node-1", 0);
  const std::string data = cluster.dir() + "/digits";
  std::filesystem::create_directories(data);
  ASSERT_TRUE(WriteFileAtomically(data + "/labels.txt", "0 1 2\n").ok());
  auto put = cluster.Cohort({"data", "put", data, "digits"});
  ASSERT_EQ(put.exit_code, 0) << put.err;
  const std::string code = cluster.dir() + "/proj";
  std::filesystem::create_directories(code);
  ASSERT_TRUE(WriteFileAtomically(code + "/train.txt", "v1\n").ok());

  const std::string probe = fmt::format(
      "cat $COHORT_DATA_DIR/digits/labels.txt; "
      "(echo x >> $COHORT_DATA_DIR/digits/labels.txt) 2>&1 | grep -o 'Permission denied'; "
      "touch $COHORT_DATA_DIR/digits/new 2>&1 | grep -o 'Permission denied'; "
      "ls {}/cache/versions 2>&1 | grep -o 'Permission denied'; "
      "echo v2 >> train.txt && echo code $(stat -c %U train.txt) $(cat train.txt | wc -l)",
      cluster.AgentDir("node-1"));
  auto run = RunCommand(
      {BinDir() + "/cohort", "run", "--wait", "--dataset", "digits", "--", "sh", "-c", probe},
      {{"COHORT_MASTER", cluster.url()}, {"COHORT_TOKEN", TokenOf(cluster, a.name())}}, code);
  ASSERT_EQ(run.exit_code, 0) << run.out << run.err;
  EXPECT_THAT(run.out, HasSubstr("0 1 2\n"));
  size_t denied = 0;
  for (size_t at = run.out.find("Permission denied"); at != std::string::npos;
       at = run.out.find("Permission denied", at + 1)) {
    ++denied;
  }
  EXPECT_EQ(denied, 3u) << "writing the dataset, adding to it, listing the cache: " << run.out;
  EXPECT_THAT(run.out, HasSubstr("code " + a.name() + " 2\n")) << "its own copy, changed";
}

TEST(RunAs, ATaskThatCannotRunAsItsUserFailsWithTheReason) {
  if (::geteuid() != 0) GTEST_SKIP() << "an agent that is not root runs every task as itself";
  LocalCluster cluster("run-as-refused");
  cluster.StartMaster();
  cluster.StartAgent("node-1", 0, {}, {}, /*allow_root_tasks=*/false);
  const std::string spec =
      "name: x\ntasks: [{role: main, command: [\"true\"]}]\n"
      "restart: {max_attempts: 1}\n";

  std::string missing = "cohort-t-none-" + RandomSuffix();
  JobId of_missing = SubmitAs(cluster, missing, spec);
  Job failed = cluster.WaitForState(of_missing, JobState::kFailed);
  // The only node lacks the account: no node is left to try (docs/reliability.md, "Tasks that
  // cannot start").
  const std::string no_account = fmt::format(
      "main/0 could not start on node-1: no Unix account \"{}\" on node-1: create it, or have "
      "an admin map the Cohort user to a uid",
      missing);
  EXPECT_THAT(failed.message, HasSubstr(no_account));
  EXPECT_THAT(failed.message, HasSubstr("(no node is left to try: it could not start on node-1)"));
  EXPECT_THAT(cluster.Logs(of_missing),
              HasSubstr("cohort: the agent refused to start the task: no Unix account"));
  auto events = cluster.client().Events(of_missing);
  ASSERT_TRUE(events.ok());
  bool told = false;
  for (const auto& e : *events) told |= e.message == "FAILED: " + no_account;
  EXPECT_TRUE(told) << "a task_ended event gives the reason";

  JobId of_root = SubmitAs(cluster, "root", spec);
  failed = cluster.WaitForState(of_root, JobState::kFailed);
  EXPECT_THAT(failed.message,
              HasSubstr("main/0 did not start: the task would run as root (uid 0, user \"root\") "
                        "on node-1, which this agent refuses: start the agent with "
                        "--allow-root-tasks to run tasks of root"));
}

// A's task asks the master about B's job, without a token and with A's own (a task may well hold
// its user's token): B is in another team, so the answers hold nothing of what B's job runs.
constexpr const char* kApiProbe = R"py(
import json, sys, urllib.request, urllib.error
url, job, node, token = sys.argv[1:5]
def call(what, method, path, tok, body=None):
    req = urllib.request.Request(url + path, method=method, data=body)
    if tok:
        req.add_header("Authorization", "Bearer " + tok)
    try:
        with urllib.request.urlopen(req, timeout=10) as r:
            status, text = r.status, r.read().decode()
    except urllib.error.HTTPError as e:
        status, text = e.code, e.read().decode()
    if path == "/api/v1/jobs":  # only B's entry: A's own job holds this very script
        entries = [j for j in json.loads(text)["jobs"] if j["id"] == int(job)]
        what += f" ({len(entries)} of B's)"
        text = json.dumps(entries)
    leaked = "LEAKED" if "b-secret-7f3a" in text or "SECRET" in text else "nothing of B's"
    print(f"{what}: {status}, {leaked}")
call("B's job without a token", "GET", f"/api/v1/jobs/{job}", None)
call("B's job", "GET", f"/api/v1/jobs/{job}", token)
call("every job, B's entry", "GET", "/api/v1/jobs", token)
call("B's events", "GET", f"/api/v1/jobs/{job}/events", token)
call("B's logs", "GET", f"/api/v1/jobs/{job}/logs", token)
call("B's node's sync", "POST", f"/api/v1/agents/{node}/sync", token, b"{}")
call("killing B's job", "POST", f"/api/v1/jobs/{job}/kill", token, b"")
)py";

TEST(RunAs, ATaskCannotReadAnotherTeamsEnvironmentThroughTheApi) {
  if (::geteuid() != 0) GTEST_SKIP() << "creating Unix accounts needs root";
  std::string suffix = RandomSuffix();
  TestUser a("cohort-t-a-" + suffix);
  TestUser b("cohort-t-b-" + suffix);
  LocalCluster cluster("run-as-api");
  cluster.StartMaster();
  cluster.StartAgent("node-1", 0);

  const std::string team_b = "team-b-" + suffix;
  ASSERT_TRUE(cluster.client().SetTeam(team_b, 0, std::nullopt).ok());
  std::string token_b = TokenOf(cluster, b.name());
  ASSERT_TRUE(cluster.client().SetMember(team_b, b.name(), "member").ok());
  JobId job_b = SubmitWith(cluster, token_b,
                           fmt::format(R"(
name: b-secret
team: {}
tasks:
  - role: main
    command: [/bin/sh, -c, "echo ready; exec sleep 600"]
    env: {{SECRET: b-secret-7f3a}}
)",
                                       team_b));
  ASSERT_EQ(cluster.WaitForState(job_b, JobState::kRunning).state, JobState::kRunning);

  std::string token_a = TokenOf(cluster, a.name());
  JobId job_a = SubmitWith(cluster, token_a,
                           fmt::format(R"(
name: a-api-probes
tasks:
  - role: main
    command: [/usr/bin/python3, -c, {}, "{}", "{}", node-1, "{}"]
restart: {{max_attempts: 1}}
)",
                                       Json(kApiProbe).dump(), cluster.url(), job_b, token_a));
  Job done_a = cluster.WaitForState(job_a, JobState::kSucceeded);
  EXPECT_EQ(cluster.Logs(job_a),
            "B's job without a token: 401, nothing of B's\n"
            "B's job: 200, nothing of B's\n"
            "every job, B's entry (1 of B's): 200, nothing of B's\n"
            "B's events: 403, nothing of B's\n"
            "B's logs: 403, nothing of B's\n"
            "B's node's sync: 403, nothing of B's\n"
            "killing B's job: 403, nothing of B's\n")
      << done_a.message;

  // The same calls with B's token do see it: the probe can tell a leak from an empty answer.
  auto seen_by_b = client::CohortClient::Create(cluster.url(), token_b);
  ASSERT_TRUE(seen_by_b.ok());
  auto seen = (*seen_by_b)->GetJob(job_b);
  ASSERT_TRUE(seen.ok()) << seen.status().ToString();
  ASSERT_FALSE(seen->spec.tasks.empty());
  EXPECT_EQ(seen->spec.tasks[0].env["SECRET"], "b-secret-7f3a");
  EXPECT_EQ(cluster.client().GetJob(job_b)->state, JobState::kRunning);

  ASSERT_TRUE(cluster.client().Kill(job_b).ok());
  cluster.WaitForState(job_b, JobState::kKilled);
}

}  // namespace
}  // namespace cohort::testing
