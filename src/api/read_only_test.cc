// The API of a read-only master (its state disk short of space): reads and agents' syncs are
// served; every change, the audit entry included, is refused 503 with the reason and a
// Retry-After; health says read_only (master/state_disk.h).
#include <gmock/gmock.h>

#include "api/served_master_test_fixture.h"
#include "model/json.h"

namespace cohort::api {
namespace {

using ::testing::HasSubstr;

constexpr char kSpec[] = "name: x\ntasks: [{role: main, command: [\"true\"]}]\n";

class ReadOnlyApi : public ServedMaster {};

TEST_F(ReadOnlyApi, ReadsAreServedAndChangesAre503WithTheReason) {
  ASSERT_EQ(Serve("POST", "/api/v1/jobs", {}, kSpec).status, 201);
  state_disk_->Set(0);
  master_->Tick();
  ASSERT_TRUE(master_->read_only());

  HttpResponse submit = Serve("POST", "/api/v1/jobs", {}, kSpec);
  EXPECT_EQ(submit.status, 503) << submit.body;
  EXPECT_THAT(submit.body, HasSubstr("read-only"));
  EXPECT_THAT(submit.body, HasSubstr("--state-disk-reserve"));
  bool retry_after = false;
  for (const auto& [name, value] : submit.headers) retry_after |= name == "Retry-After";
  EXPECT_TRUE(retry_after);
  EXPECT_EQ(Serve("POST", "/api/v1/jobs/1/kill").status, 503);
  EXPECT_EQ(Serve("PUT", "/api/v1/secrets/key", {}, "{\"value\": \"v\"}").status, 503);
  EXPECT_EQ(Serve("POST", "/api/v1/tokens", {}, "{}").status, 503);

  HttpResponse jobs = Serve("GET", "/api/v1/jobs");
  EXPECT_EQ(jobs.status, 200) << jobs.body;
  EXPECT_THAT(jobs.body, HasSubstr("\"name\":\"x\""));
  EXPECT_EQ(Serve("GET", "/api/v1/jobs/1").status, 200);
  auto health = ParseJson(Serve("GET", "/api/v1/health").body);
  ASSERT_TRUE(health.ok());
  EXPECT_EQ((*health)["status"], "read_only");
  EXPECT_THAT((*health)["reason"].get<std::string>(), HasSubstr("state disk"));

  state_disk_->Set(1ULL << 40);
  master_->Tick();
  EXPECT_EQ(Serve("POST", "/api/v1/jobs", {}, kSpec).status, 201);
  health = ParseJson(Serve("GET", "/api/v1/health").body);
  EXPECT_EQ((*health)["status"], "ok");
}

}  // namespace
}  // namespace cohort::api
