#include "exec/exec_request.h"

#include <gtest/gtest.h>

namespace cohort::exec {
namespace {

TEST(ExecRequest, RoundTripsAndRefusesWhatIsNotARequest) {
  auto back = DecodeRequest(EncodeRequest({"c0ffee", "orted -mca ess \"env\""}));
  ASSERT_TRUE(back.ok()) << back.status().ToString();
  EXPECT_EQ(back->credential, "c0ffee");
  EXPECT_EQ(back->command, "orted -mca ess \"env\"");
  EXPECT_EQ(EncodeRequest({"a", "b"}).back(), '\n') << "one line";

  auto refused = [](std::string_view line) { return DecodeRequest(line).status().message(); };
  EXPECT_EQ(refused("nonsense"), "the request is not a JSON object");
  EXPECT_EQ(refused("[1]"), "the request is not a JSON object");
  EXPECT_EQ(refused(R"({"credential": "a"})"), "request: command: must be a string");
  EXPECT_EQ(refused(R"({"credential": 1, "command": "x"})"),
            "request: credential: must be a string");
  EXPECT_EQ(refused(R"({"credential": "a", "command": ""})"), "request: command: is empty");
  EXPECT_EQ(refused(R"({"credential": "a", "command": "x", "user": "root"})"),
            "request: user: unknown field; expected credential and command");
}

TEST(ExecAnswer, SaysHowTheCommandEndedAsAShellWould) {
  auto back = [](const ExecAnswer& a) {
    auto decoded = DecodeAnswer(EncodeAnswer(a));
    EXPECT_TRUE(decoded.ok()) << decoded.status().ToString();
    return decoded.ok() ? decoded->ExitStatus() : -1;
  };
  EXPECT_EQ(back(ExecAnswer::Exited(0)), 0);
  EXPECT_EQ(back(ExecAnswer::Exited(3)), 3);
  EXPECT_EQ(back(ExecAnswer::Signaled(9)), 137);
  auto refused = DecodeAnswer(EncodeAnswer(ExecAnswer::Refused("credential refused")));
  ASSERT_TRUE(refused.ok());
  EXPECT_EQ(refused->error, "credential refused");
  EXPECT_EQ(refused->ExitStatus(), 255);
  EXPECT_FALSE(DecodeAnswer("{}").ok());
}

}  // namespace
}  // namespace cohort::exec
