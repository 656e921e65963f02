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
            "request: user: unknown field; expected credential, command, env, cwd, gpus or stream");
  EXPECT_EQ(refused(R"({"credential": "a", "command": "x", "env": {"A B": "1"}})"),
            "request: env.A B: must be a variable name with a string value");
  EXPECT_EQ(refused(R"({"credential": "a", "command": "x", "env": {"A": 1}})"),
            "request: env.A: must be a variable name with a string value");
  EXPECT_EQ(refused(R"({"credential": "a", "command": "x", "gpus": {"index": -1, "count": 1}})"),
            "request: gpus: must be {\"index\": 0 to 1024, \"count\": 1 to 64}");
  EXPECT_EQ(refused(R"({"credential": "a", "command": "x", "stream": "yes"})"),
            "request: stream: must be true or false");

  ExecRequest full{"c", "srun-task", {{"SLURM_PROCID", "7"}}, "/work", GpuSlice{3, 2}, true};
  auto again = DecodeRequest(EncodeRequest(full));
  ASSERT_TRUE(again.ok()) << again.status().ToString();
  EXPECT_EQ(again->env, full.env);
  EXPECT_EQ(again->cwd, "/work");
  EXPECT_EQ(again->gpus, full.gpus);
  EXPECT_TRUE(again->stream);
}

TEST(ExecRequest, AGpuSliceIsItsShareOfTheTasksGpus) {
  EXPECT_EQ(*SliceGpus("0,1,2,3", GpuSlice{0, 2}), "0,1");
  EXPECT_EQ(*SliceGpus("0,1,2,3", GpuSlice{3, 1}), "3");
  EXPECT_FALSE(SliceGpus("0,1,2,3", GpuSlice{2, 2}).ok());
  EXPECT_FALSE(SliceGpus("", GpuSlice{0, 1}).ok());
  EXPECT_EQ(EncodeFrame("out", "hi\n"), "out 3\nhi\n");
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

TEST(ExecSignal, OnlyASignalLineFrom1To64IsOne) {
  EXPECT_EQ(EncodeSignal(10), "signal 10\n");
  EXPECT_EQ(DecodeSignal("signal 10"), 10);
  EXPECT_EQ(DecodeSignal("signal 1"), 1);
  EXPECT_EQ(DecodeSignal("signal 64"), 64);
  for (const char* line : {"signal 0", "signal 65", "signal -1", "signal 9x", "signal ", "signal",
                           "signal 010", "kill 9", " signal 9", "signal 999999999999"}) {
    EXPECT_EQ(DecodeSignal(line), std::nullopt) << line;
  }
  EXPECT_LE(EncodeSignal(64).size(), kMaxSignalLineBytes);
}

}  // namespace
}  // namespace cohort::exec
