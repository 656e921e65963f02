// The dataset routes on a served master, over its directory store: chunks asked about and
// uploaded once (a second upload of the same chunk writes nothing), versions committed, listed,
// read and deleted; hash mismatches, missing chunks, bad names and paths refused naming them;
// another team's private dataset invisible; the team's quota.
#include <gtest/gtest.h>

#include <atomic>

#include "api/served_master_test_fixture.h"
#include "model/json.h"
#include "store/content_hash.h"
#include "store/dataset_layout.h"
#include "store/forwarding_store.h"

namespace cohort::api {
namespace {

// The master's store, counting the puts of chunks it takes.
class CountingStore final : public store::ForwardingStore {
 public:
  CountingStore(std::unique_ptr<store::ObjectStore> inner, std::atomic<int>& blob_puts)
      : ForwardingStore(std::move(inner)), blob_puts_(blob_puts) {}
  Status Put(const std::string& key, std::string_view data) override {
    if (key.starts_with("blobs/")) ++blob_puts_;
    return ForwardingStore::Put(key, data);
  }

 private:
  std::atomic<int>& blob_puts_;
};

std::string Sha(const std::string& bytes) { return *store::Sha256Hex(bytes); }

// A commit's body of files of one chunk each (none for an empty one).
std::string Files(const std::map<std::string, std::string>& files, bool is_public = false) {
  Json list = Json::array();
  for (const auto& [path, content] : files) {
    Json chunks = Json::array();
    if (!content.empty())
      chunks.push_back(Json{{"sha256", Sha(content)}, {"size", content.size()}});
    list.push_back(Json{
        {"path", path}, {"size", content.size()}, {"sha256", Sha(content)}, {"chunks", chunks}});
  }
  return Json{{"files", list}, {"public", is_public}}.dump();
}

Json Body(const HttpResponse& r) { return Json::parse(r.body); }

class DatasetRoutesTest : public ServedMaster {
 protected:
  std::unique_ptr<store::ObjectStore> Objects(std::unique_ptr<store::ObjectStore> s) override {
    return std::make_unique<CountingStore>(std::move(s), blob_puts_);
  }
  void Configure(master::MasterConfig& config) override { config.store_quota_per_team = quota_; }

  HttpResponse Upload(const std::string& content) {
    return Serve("PUT", "/api/v1/blobs/" + Sha(content), {}, content);
  }
  // A request as another user (made a member of `team`, or `role` there) instead of ada.
  std::string TokenFor(const std::string& user, const std::string& team,
                       TeamRole role = TeamRole::kMember) {
    EXPECT_TRUE(
        master_->accounts().CreateUser(User{user, false, {{team, role}}, {}, {}, {}, {}}).ok());
    return master_->accounts().Issue(TokenKind::kUser, user, "test")->token;
  }
  HttpResponse ServeAs(const std::string& token, std::string method, std::string path,
                       std::map<std::string, std::string> query = {}, std::string body = {}) {
    std::string ada = token_;
    token_ = token;
    HttpResponse r = Serve(std::move(method), std::move(path), std::move(query), std::move(body));
    token_ = ada;
    return r;
  }

  std::atomic<int> blob_puts_{0};
  int64_t quota_ = 0;
};

TEST_F(DatasetRoutesTest, PutCommitListReadAndDeleteAVersion) {
  const std::string a = "first file", b = "second";
  HttpResponse missing =
      Serve("POST", "/api/v1/blobs/missing", {}, Json{{"sha256", {Sha(a), Sha(b), Sha(a)}}}.dump());
  ASSERT_EQ(missing.status, 200) << missing.body;
  EXPECT_EQ(Body(missing)["missing"], Json::array({Sha(a), Sha(b)}));

  HttpResponse stored = Upload(a);
  ASSERT_EQ(stored.status, 201) << stored.body;
  EXPECT_EQ(Body(stored)["stored"], true);
  ASSERT_EQ(Upload(b).status, 201);
  EXPECT_EQ(blob_puts_, 2);
  // The same chunk again: answered, not written again.
  HttpResponse again = Upload(a);
  EXPECT_EQ(again.status, 200) << again.body;
  EXPECT_EQ(Body(again)["stored"], false);
  EXPECT_EQ(blob_puts_, 2);
  missing = Serve("POST", "/api/v1/blobs/missing", {}, Json{{"sha256", {Sha(a), Sha(b)}}}.dump());
  EXPECT_EQ(Body(missing)["missing"], Json::array());

  HttpResponse one =
      Serve("POST", "/api/v1/datasets/cifar/versions", {}, Files({{"a.txt", a}, {"empty", ""}}));
  ASSERT_EQ(one.status, 201) << one.body;
  EXPECT_EQ(Body(one)["version"], 1);
  EXPECT_EQ(Body(one)["team"], "default");
  EXPECT_EQ(Body(one)["file_count"], 2);
  EXPECT_EQ(Body(one)["bytes"], a.size());
  HttpResponse two =
      Serve("POST", "/api/v1/datasets/cifar/versions", {}, Files({{"a.txt", a}, {"dir/b.txt", b}}));
  ASSERT_EQ(two.status, 201) << two.body;
  EXPECT_EQ(Body(two)["version"], 2);

  HttpResponse list = Serve("GET", "/api/v1/datasets");
  ASSERT_EQ(list.status, 200) << list.body;
  ASSERT_EQ(Body(list)["datasets"].size(), 1u);
  EXPECT_EQ(Body(list)["datasets"][0]["name"], "cifar");
  EXPECT_EQ(Body(list)["datasets"][0]["versions"], 2);
  EXPECT_EQ(Body(list)["datasets"][0]["latest"]["version"], 2);
  EXPECT_EQ(Body(list)["more"], false);

  HttpResponse versions = Serve("GET", "/api/v1/datasets/cifar");
  ASSERT_EQ(versions.status, 200) << versions.body;
  ASSERT_EQ(Body(versions)["versions"].size(), 2u);
  EXPECT_EQ(Body(versions)["versions"][0]["user"], "ada");

  HttpResponse manifest = Serve("GET", "/api/v1/datasets/cifar/versions/2", {{"files", "true"}});
  ASSERT_EQ(manifest.status, 200) << manifest.body;
  ASSERT_EQ(Body(manifest)["files"].size(), 2u);
  EXPECT_EQ(Body(manifest)["files"][1]["path"], "dir/b.txt");
  EXPECT_EQ(Body(manifest)["files"][1]["chunks"][0]["sha256"], Sha(b));
  EXPECT_FALSE(Body(Serve("GET", "/api/v1/datasets/cifar/versions/2")).contains("files"));

  HttpResponse deleted = Serve("DELETE", "/api/v1/datasets/cifar/versions/1");
  ASSERT_EQ(deleted.status, 200) << deleted.body;
  EXPECT_EQ(Serve("GET", "/api/v1/datasets/cifar/versions/1").status, 404);
  EXPECT_EQ(Serve("DELETE", "/api/v1/datasets/cifar/versions/1").status, 404);
  EXPECT_EQ(Body(Serve("GET", "/api/v1/datasets"))["datasets"][0]["versions"], 1);
  // The chunks stay: version 2 shares them.
  EXPECT_EQ(Body(Serve("POST", "/api/v1/blobs/missing", {},
                       Json{{"sha256", {Sha(a)}}}.dump()))["missing"],
            Json::array());
  // A deleted version's number is not given again.
  EXPECT_EQ(
      Body(Serve("POST", "/api/v1/datasets/cifar/versions", {}, Files({{"a", a}})))["version"], 3);
}

TEST_F(DatasetRoutesTest, AChunkWhoseBytesAreNotItsHashIsRefusedNamingBoth) {
  HttpResponse r = Serve("PUT", "/api/v1/blobs/" + Sha("meant"), {}, "sent");
  EXPECT_EQ(r.status, 400);
  EXPECT_NE(r.body.find(Sha("meant")), std::string::npos) << r.body;
  EXPECT_NE(r.body.find(Sha("sent")), std::string::npos) << r.body;
  EXPECT_EQ(blob_puts_, 0);
  EXPECT_EQ(Serve("PUT", "/api/v1/blobs/not-a-hash", {}, "x").status, 400);
  EXPECT_EQ(Serve("PUT", "/api/v1/blobs/" + Sha(""), {}, "").status, 400);
}

TEST_F(DatasetRoutesTest, ACommitNamingAChunkNotStoredIsRefusedAndShowsNothing) {
  ASSERT_EQ(Upload("here").status, 201);
  HttpResponse r = Serve("POST", "/api/v1/datasets/cifar/versions", {},
                         Files({{"a", "here"}, {"b", "never uploaded"}}));
  EXPECT_EQ(r.status, 400);
  EXPECT_NE(r.body.find("files[1] (\\\"b\\\")"), std::string::npos) << r.body;
  EXPECT_NE(r.body.find(Sha("never uploaded")), std::string::npos) << r.body;
  EXPECT_EQ(Serve("GET", "/api/v1/datasets/cifar").status, 404);
  EXPECT_EQ(Body(Serve("GET", "/api/v1/datasets"))["datasets"], Json::array());
}

TEST_F(DatasetRoutesTest, BadNamesPathsAndBodiesAreRefusedNamingTheField) {
  ASSERT_EQ(Upload("x").status, 201);
  struct Case {
    std::string method, path, body, says;
  };
  std::string too_many = Json{{"sha256", std::vector<std::string>(1001, Sha("x"))}}.dump();
  for (const Case& c : {
           Case{"POST", "/api/v1/datasets/Cifar/versions", Files({{"a", "x"}}), "name"},
           Case{"POST", "/api/v1/datasets/cifar/versions", Files({{"../a", "x"}}), "files[0].path"},
           Case{"POST", "/api/v1/datasets/cifar/versions", Files({{"/etc/a", "x"}}),
                "files[0].path"},
           Case{"POST", "/api/v1/datasets/cifar/versions", R"({"files": 3})", "files"},
           Case{"POST", "/api/v1/datasets/cifar/versions", R"({"public": true})", "files: missing"},
           Case{"POST", "/api/v1/datasets/cifar/versions", R"({"files": [], "team": "x"})",
                "team: unknown field"},
           Case{"GET", "/api/v1/datasets/cifar/versions/0", "", "version"},
           Case{"GET", "/api/v1/datasets/cifar/versions/x", "", "version"},
           Case{"POST", "/api/v1/blobs/missing", R"({"sha256": ["abc"]})", "sha256[0]"},
           Case{"POST", "/api/v1/blobs/missing", too_many, "at most 1000"},
       }) {
    HttpResponse r = Serve(c.method, c.path, {}, c.body);
    EXPECT_EQ(r.status, 400) << c.path << " " << c.body << ": " << r.body;
    EXPECT_NE(r.body.find(c.says), std::string::npos) << c.path << ": " << r.body;
  }
  EXPECT_EQ(Serve("GET", "/api/v1/datasets", {{"team", "no/such"}}).status, 400);
}

TEST_F(DatasetRoutesTest, AnotherTeamsPrivateDatasetIsInvisibleAndItsPublicOneReadOnly) {
  ASSERT_EQ(Upload("secret").status, 201);
  ASSERT_EQ(Serve("POST", "/api/v1/datasets/private/versions", {}, Files({{"a", "secret"}})).status,
            201);
  ASSERT_EQ(
      Serve("POST", "/api/v1/datasets/open/versions", {}, Files({{"a", "secret"}}, true)).status,
      201);
  const std::string bob = TokenFor("bob", "nlp");

  HttpResponse list = ServeAs(bob, "GET", "/api/v1/datasets");
  ASSERT_EQ(list.status, 200) << list.body;
  ASSERT_EQ(Body(list)["datasets"].size(), 1u) << list.body;
  EXPECT_EQ(Body(list)["datasets"][0]["name"], "open");

  HttpResponse hidden = ServeAs(bob, "GET", "/api/v1/datasets/private", {{"team", "default"}});
  HttpResponse absent = ServeAs(bob, "GET", "/api/v1/datasets/nothing", {{"team", "default"}});
  EXPECT_EQ(hidden.status, 404);
  EXPECT_EQ(absent.status, 404);
  EXPECT_EQ(
      ServeAs(bob, "GET", "/api/v1/datasets/private/versions/1", {{"team", "default"}}).status,
      404);
  EXPECT_EQ(
      ServeAs(bob, "DELETE", "/api/v1/datasets/private/versions/1", {{"team", "default"}}).status,
      404);
  EXPECT_EQ(ServeAs(bob, "GET", "/api/v1/datasets/open/versions/1",
                    {{"team", "default"}, {"files", "true"}})
                .status,
            200);
  // Public is readable, not changeable.
  EXPECT_EQ(
      ServeAs(bob, "DELETE", "/api/v1/datasets/open/versions/1", {{"team", "default"}}).status,
      403);
  EXPECT_EQ(Serve("GET", "/api/v1/datasets/open/versions/1").status, 200);
  // Bob's datasets go to his own team; he may not commit to ada's.
  EXPECT_EQ(ServeAs(bob, "POST", "/api/v1/datasets/x/versions", {{"team", "default"}},
                    Json{{"files", Json::array()}}.dump())
                .status,
            403);
}

TEST_F(DatasetRoutesTest, AJobIsPinnedToVersionsItsSubmitterMayReadAndKeepsThemFromDeletion) {
  ASSERT_EQ(Upload("v1").status, 201);
  ASSERT_EQ(Upload("v2").status, 201);
  ASSERT_EQ(Serve("POST", "/api/v1/datasets/digits/versions", {}, Files({{"a", "v1"}})).status,
            201);
  ASSERT_EQ(Serve("POST", "/api/v1/datasets/digits/versions", {}, Files({{"a", "v2"}})).status,
            201);
  ASSERT_EQ(Serve("POST", "/api/v1/datasets/secret/versions", {}, Files({{"a", "v1"}})).status,
            201);
  auto submit = [&](const std::string& datasets, const std::string& token = {}) {
    std::string spec = Json{{"name", "reader"},
                            {"datasets", Json::parse(datasets)},
                            {"tasks", Json::array({Json{{"role", "w"}, {"command", {"true"}}}})}}
                           .dump();
    return token.empty() ? Serve("POST", "/api/v1/jobs", {}, spec)
                         : ServeAs(token, "POST", "/api/v1/jobs", {}, spec);
  };
  HttpResponse latest = submit(R"(["digits", "default/secret:1"])");
  ASSERT_EQ(latest.status, 201) << latest.body;
  EXPECT_EQ(Body(latest)["spec"]["datasets"],
            Json::parse(R"(["default/digits:2", "default/secret:1"])"));
  HttpResponse older = submit(R"(["digits:1"])");
  ASSERT_EQ(older.status, 201) << older.body;
  EXPECT_EQ(Body(older)["spec"]["datasets"], Json::parse(R"(["default/digits:1"])"));

  // Another team's member may not read the private one: the same 404 as for one that is not.
  const std::string bob = TokenFor("bob", "nlp");
  HttpResponse hidden = submit(R"(["default/secret"])", bob);
  EXPECT_EQ(hidden.status, 404) << hidden.body;
  EXPECT_NE(hidden.body.find("datasets[0]: no dataset default/secret that you may read"),
            std::string::npos)
      << hidden.body;
  EXPECT_EQ(submit(R"(["digits:3"])").status, 404);

  // In use by a job that has not ended: not deleted.
  HttpResponse in_use = Serve("DELETE", "/api/v1/datasets/digits/versions/1");
  EXPECT_EQ(in_use.status, 409) << in_use.body;
  EXPECT_NE(in_use.body.find("dataset default/digits:1 is in use by job " +
                             std::to_string(Body(older)["id"].get<int64_t>())),
            std::string::npos)
      << in_use.body;
  ASSERT_EQ(
      Serve("POST", "/api/v1/jobs/" + std::to_string(Body(older)["id"].get<int64_t>()) + "/kill")
          .status,
      200);
  EXPECT_EQ(Serve("DELETE", "/api/v1/datasets/digits/versions/1").status, 200);
}

TEST_F(DatasetRoutesTest, AJobsCodeIsCommittedOnceOverStoredChunksAndNamedByItsHash) {
  ASSERT_EQ(Upload("print(1)\n").status, 201);
  auto body = [](const std::string& files) {
    return Json{{"files", Json::parse(files)["files"]}}.dump();
  };
  const std::string code = body(Files({{"train.py", "print(1)\n"}, {"empty", ""}}));
  HttpResponse first = Serve("POST", "/api/v1/contexts", {}, code);
  ASSERT_EQ(first.status, 201) << first.body;
  const std::string sha = Body(first)["context"];
  EXPECT_EQ(Body(first)["file_count"], 2);
  EXPECT_EQ(Body(first)["bytes"], 9);
  auto stored = master_->objects().Get(store::ContextKey(sha), 1 << 20);
  ASSERT_TRUE(stored.ok()) << stored.status().ToString();
  EXPECT_EQ(*store::Sha256Hex(*stored), sha) << "named by its own bytes";
  HttpResponse again = Serve("POST", "/api/v1/contexts", {}, code);
  ASSERT_EQ(again.status, 201);
  EXPECT_EQ(Body(again)["context"], sha);

  HttpResponse unsent =
      Serve("POST", "/api/v1/contexts", {}, body(Files({{"x.py", "never sent"}})));
  EXPECT_EQ(unsent.status, 400);
  EXPECT_NE(unsent.body.find("is not in the store; upload it first"), std::string::npos)
      << unsent.body;
  EXPECT_EQ(Serve("POST", "/api/v1/contexts", {}, R"({"files": [], "public": true})").status, 400);
  EXPECT_EQ(Serve("POST", "/api/v1/contexts", {}, body(Files({{"../x", ""}}))).status, 400);
  const std::string viewer = TokenFor("vic", "default", TeamRole::kViewer);
  EXPECT_EQ(ServeAs(viewer, "POST", "/api/v1/contexts", {}, code).status, 403);
}

TEST_F(DatasetRoutesTest, AViewerMayNotUploadChunks) {
  const std::string viewer = TokenFor("val", "default", TeamRole::kViewer);
  HttpResponse r = ServeAs(viewer, "PUT", "/api/v1/blobs/" + Sha("x"), {}, "x");
  EXPECT_EQ(r.status, 403) << r.body;
  EXPECT_EQ(blob_puts_, 0);
}

class DatasetQuotaTest : public DatasetRoutesTest {
 protected:
  void Configure(master::MasterConfig& config) override { config.store_quota_per_team = 10; }
};

TEST_F(DatasetQuotaTest, AVersionOverTheTeamsQuotaIs409NamingUseAndLimit) {
  ASSERT_EQ(Upload("12345678").status, 201);
  ASSERT_EQ(Upload("abcde").status, 201);
  ASSERT_EQ(Serve("POST", "/api/v1/datasets/d/versions", {}, Files({{"a", "12345678"}})).status,
            201);
  HttpResponse over = Serve("POST", "/api/v1/datasets/d/versions", {}, Files({{"b", "abcde"}}));
  EXPECT_EQ(over.status, 409) << over.body;
  EXPECT_NE(over.body.find("quota is 10 bytes"), std::string::npos) << over.body;
  EXPECT_NE(over.body.find("its datasets take 8 bytes"), std::string::npos) << over.body;
  EXPECT_EQ(Body(Serve("GET", "/api/v1/datasets/d"))["versions"].size(), 1u);
}

}  // namespace
}  // namespace cohort::api
