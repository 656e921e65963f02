#include "exec/exec_endpoints.h"

#include <gtest/gtest.h>

namespace cohort::exec {
namespace {

TEST(ExecEndpoints, FindsATaskByItsName) {
  const char* endpoints =
      "cohort-job1-worker-0=10.0.0.1:30001,cohort-job1-worker-1=gpu-7.lab:30002";
  auto found = FindEndpoint(endpoints, "cohort-job1-worker-1");
  ASSERT_TRUE(found.ok()) << found.status().ToString();
  EXPECT_EQ(found->host, "gpu-7.lab");
  EXPECT_EQ(found->port, 30002);
  EXPECT_EQ(FindEndpoint(endpoints, "cohort-job1-worker-0")->host, "10.0.0.1");

  auto missing = FindEndpoint(endpoints, "cohort-job1-worker-2");
  EXPECT_EQ(missing.status().code(), StatusCode::kNotFound);
  EXPECT_EQ(missing.status().message(),
            "\"cohort-job1-worker-2\" is not a task of this job that serves commands; those are: "
            "cohort-job1-worker-0, cohort-job1-worker-1");
  EXPECT_EQ(FindEndpoint("", "cohort-job1-worker-0").status().code(), StatusCode::kNotFound);
  for (const char* bad : {"cohort-job1-worker-0", "cohort-job1-worker-0=host", "w=host:0",
                          "w=host:x", "w=:30001", "w=host:70000"}) {
    EXPECT_EQ(FindEndpoint(bad, "w").status().code(), StatusCode::kInvalidArgument) << bad;
  }
}

}  // namespace
}  // namespace cohort::exec
