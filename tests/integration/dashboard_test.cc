// `cohort dashboard` against a real master (docs/security.md, "Dashboard sign-in"): the link it
// prints signs its user in once, it opens a desktop's browser, and neither the code nor the
// session reaches the master's log.
#include <fmt/format.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <sys/stat.h>

#include <fstream>

#include "model/json.h"
#include "os/process.h"
#include "tests/integration/local_cluster.h"

namespace cohort::testing {
namespace {

using ::testing::HasSubstr;
using ::testing::StartsWith;

TEST(Dashboard, ALinkSignsItsUserInOnceAndOpensOnADesktop) {
  LocalCluster cluster("dashboard");
  cluster.StartMaster();
  ASSERT_EQ(cluster.Cohort({"user", "create", "ada"}).exit_code, 0);
  auto made = cluster.Cohort({"token", "create", "--user", "ada", "-o", "json"});
  ASSERT_EQ(made.exit_code, 0) << made.err;
  const std::string ada = (*ParseJson(made.out))["token"].get<std::string>();

  // A fake xdg-open that writes down what it was asked to open; no desktop: it is not called.
  const std::string bin = cluster.dir() + "/desktop-bin";
  const std::string opened_file = cluster.dir() + "/opened";
  std::filesystem::create_directories(bin);
  std::ofstream(bin + "/xdg-open") << "#!/bin/sh\necho \"$1\" > " << opened_file << "\n";
  ::chmod((bin + "/xdg-open").c_str(), 0755);
  const std::string path = bin + ":/usr/bin:/bin";
  auto as_ada = [&](std::vector<std::string> args, std::map<std::string, std::string> env) {
    args.insert(args.begin(), BinDir() + "/cohort");
    env.emplace("COHORT_MASTER", cluster.url());
    env.emplace("COHORT_TOKEN", ada);
    env.emplace("XDG_CONFIG_HOME", cluster.dir() + "/ada-config");
    env.emplace("PATH", path);
    return RunCommand(args, env);
  };
  auto json = as_ada({"dashboard", "-o", "json"}, {{"DISPLAY", ""}, {"WAYLAND_DISPLAY", ""}});
  ASSERT_EQ(json.exit_code, 0) << json.err;
  auto link = ParseJson(json.out);
  ASSERT_TRUE(link.ok()) << json.out;
  const std::string code = (*link)["code"].get<std::string>();
  EXPECT_THAT(code, StartsWith("cohc_"));
  EXPECT_EQ((*link)["url"], cluster.url() + "/#signin=" + code);
  EXPECT_EQ((*link)["user"], "ada");
  EXPECT_EQ((*link)["opened"], false);
  EXPECT_TRUE((*link)["expires_at"].is_string());
  EXPECT_FALSE(std::filesystem::exists(opened_file));

  // The code becomes a session of ada's, once.
  auto http = cluster.Http("");
  ASSERT_TRUE(http.ok());
  const std::string body = Json{{"code", code}}.dump();
  auto session = (*http)->Request("POST", "/api/v1/auth/sessions", body);
  ASSERT_TRUE(session.ok());
  ASSERT_EQ(session->status, 201) << session->body;
  const std::string secret = (*ParseJson(session->body))["session"].get<std::string>();
  auto whoami = RunCommand({BinDir() + "/cohort", "whoami", "-o", "json"},
                           {{"COHORT_MASTER", cluster.url()},
                            {"COHORT_TOKEN", secret},
                            {"XDG_CONFIG_HOME", cluster.dir() + "/ada-config"}});
  ASSERT_EQ(whoami.exit_code, 0) << whoami.err;
  EXPECT_EQ((*ParseJson(whoami.out))["name"], "ada");
  auto twice = (*http)->Request("POST", "/api/v1/auth/sessions", body);
  ASSERT_TRUE(twice.ok());
  EXPECT_EQ(twice->status, 401);
  EXPECT_THAT(twice->body, HasSubstr("used already"));

  // On a desktop, the link is handed to xdg-open; the text form prints the link alone.
  auto text = as_ada({"dashboard"}, {{"DISPLAY", ":0"}});
  ASSERT_EQ(text.exit_code, 0) << text.err;
  EXPECT_THAT(text.out, StartsWith(cluster.url() + "/#signin=cohc_"));
  EXPECT_THAT(text.err, HasSubstr("opened in the browser; signs in ada"));
  ASSERT_TRUE(WaitFor([&] { return !ReadFileOrEmpty(opened_file).empty(); }));
  EXPECT_EQ(ReadFileOrEmpty(opened_file), text.out);
  auto no_open = as_ada({"dashboard", "--no-open", "-o", "json"}, {{"DISPLAY", ":0"}});
  ASSERT_EQ(no_open.exit_code, 0) << no_open.err;
  EXPECT_EQ((*ParseJson(no_open.out))["opened"], false);

  // Neither codes nor the session in the master's log: only the session's public id.
  const std::string log = ReadFileOrEmpty(cluster.dir() + "/master.log");
  EXPECT_THAT(log, HasSubstr("user ada signed in to the dashboard"));
  // The part after the public id: "cohc_" or "cohs_", 16 hex digits, "_".
  for (const std::string& secret_text : {code, secret}) {
    EXPECT_EQ(log.find(secret_text.substr(22)), std::string::npos) << "in the log: " << secret_text;
  }
}

}  // namespace
}  // namespace cohort::testing
