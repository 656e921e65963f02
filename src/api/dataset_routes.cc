// Datasets (docs/api.md, "Datasets"; docs/data.md): chunks uploaded once into the store's
// blobs/, shared by every dataset and team, and versions committed over them. Who may see or
// change what is decided here, on the event loop; every store call, the catalog's included,
// runs on the API's one store worker (api/store_reads.h), never on the loop, which also makes
// the catalog's "next version" safe.
#include <fmt/format.h>

#include <algorithm>
#include <memory>
#include <set>

#include <boost/asio/executor_work_guard.hpp>

#include "api/api_server.h"
#include "api/request_params.h"
#include "master/accounts.h"
#include "master/sweeps.h"
#include "model/dataset.h"
#include "model/json_errors.h"
#include "store/content_hash.h"
#include "store/dataset_catalog.h"
#include "store/dataset_layout.h"

namespace cohort::api {
namespace {

constexpr size_t kDefaultDatasetPage = 100;
constexpr size_t kMaxDatasetPage = 1000;
// Hashes one POST /blobs/missing asks about: `cohort data put` asks in batches of this many.
constexpr size_t kMaxBlobsAsked = 1000;
constexpr std::string_view kCommitShape =
    R"({"files": [{"path", "size", "sha256", "chunks": [{"sha256", "size"}]}], "public": false} (public optional))";

// What a caller may see of the catalog, taken from their principal on the event loop for the
// store worker.
struct Viewer {
  bool admin = false;
  std::set<std::string, std::less<>> teams;  // those they have a role in

  bool Sees(const DatasetVersion& v) const {
    return admin || v.is_public || teams.contains(v.team);
  }
};

Viewer ViewerOf(const auth::Principal& caller) {
  Viewer viewer{auth::IsAdmin(caller), {}};
  for (const auto& [team, role] : caller.teams) viewer.teams.insert(team);
  return viewer;
}

// Whoever may submit jobs or put datasets somewhere (a member of a team, or an admin) may upload
// chunks and code: `what` names which, for the refusal.
Status MayUpload(const auth::Principal& caller, std::string_view what) {
  bool may_submit = auth::IsAdmin(caller);
  for (const auto& [team, role] : caller.teams) may_submit |= role >= TeamRole::kMember;
  if (may_submit) return Status::Ok();
  return Status::PermissionDenied(fmt::format(
      "{} may not upload {}: members of a team and admins may", caller.Describe(), what));
}

// The same answer for a dataset that is not there and for another team's private one: whether
// it exists is not the caller's to learn.
Status NoSuchDataset(const std::string& team, const std::string& name,
                     std::optional<int64_t> version = std::nullopt) {
  DatasetRef ref{team, name, version};
  return Status::NotFound(
      fmt::format("no dataset {} that you may read: `cohort data ls` lists those you may",
                  FormatDatasetRef(ref)));
}

StatusOr<int64_t> VersionParam(const std::string& text) {
  COHORT_ASSIGN_OR_RETURN(DatasetRef ref, ParseDatasetRef("x:" + text, "version"));
  return *ref.version;
}

// A version as lists show it: without its files.
Json VersionSummary(const DatasetVersion& v) { return DatasetVersionJson(v, false); }

// Refuses (kFailedPrecondition, naming the job or sweep) to delete a version that a job that has
// not ended names, or a sweep that may still start trials: the master's to answer, on the event
// loop, before the store worker deletes anything. Jobs and sweeps name pinned versions (team and
// version set when they were submitted).
Status CheckNoJobUses(const master::Master& master, const std::string& team,
                      const std::string& name, int64_t version) {
  const DatasetRef doomed{team, name, version};
  const std::string shown = FormatDatasetRef(doomed);
  auto names_it = [&](const DatasetRef& ref) {
    return ref.team == team && ref.name == name && ref.version == version;
  };
  for (const Job* job : master.ListJobs({})) {
    if (IsTerminal(job->state)) continue;
    if (std::any_of(job->spec.datasets.begin(), job->spec.datasets.end(), names_it)) {
      return Status::FailedPrecondition(fmt::format(
          "dataset {} is in use by job {} ({}), which is {}: delete it once the job has ended, "
          "or kill the job (cohort kill {})",
          shown, job->id, job->spec.name, JobStateName(job->state), job->id));
    }
  }
  for (const master::Sweep* sweep : master.sweeps().List()) {
    if (sweep->state != master::SweepState::kRunning &&
        sweep->state != master::SweepState::kPaused) {
      continue;
    }
    auto it = sweep->spec.trial.find("datasets");
    if (it == sweep->spec.trial.end() || !it->is_array()) continue;
    for (const Json& text : *it) {
      auto ref = ParseDatasetRef(text.is_string() ? text.get<std::string>() : "");
      if (ref.ok() && names_it(*ref)) {
        return Status::FailedPrecondition(fmt::format(
            "dataset {} is in use by sweep {} ({}), whose trials read it: delete it once the "
            "sweep has ended, or kill the sweep",
            shown, sweep->id, sweep->name()));
      }
    }
  }
  return Status::Ok();
}

// The version a commit's body describes: its files and whether it is public; kInvalidArgument
// naming the field. On the store worker: a body of 32 MiB takes a while to read.
StatusOr<DatasetVersion> DraftOf(std::string_view body) {
  auto doc = ParseJson(body);
  if (!doc.ok() || !doc->is_object()) {
    return Status::InvalidArgument(fmt::format("the body must be a JSON object: {}", kCommitShape));
  }
  DatasetVersion draft;
  bool has_files = false;
  for (const auto& [key, field] : doc->items()) {
    if (key == "files") {
      COHORT_ASSIGN_OR_RETURN(draft.files, DatasetFilesFromJson(field));
      has_files = true;
    } else if (key == "public") {
      if (!field.is_boolean()) {
        return Status::InvalidArgument(
            fmt::format("public: must be true or false, not {}", DescribeJsonValue(field)));
      }
      draft.is_public = field.get<bool>();
    } else {
      return Status::InvalidArgument(
          fmt::format("{}: unknown field; expected {}", key.substr(0, 80), kCommitShape));
    }
  }
  if (!has_files) {
    return Status::InvalidArgument(fmt::format("files: missing; expected {}", kCommitShape));
  }
  return draft;
}

}  // namespace

StatusOr<std::string> ApiServer::DatasetTeam(const Call& call) {
  auto it = call.request.query.find("team");
  std::string team;
  if (it != call.request.query.end() && !it->second.empty()) {
    team = it->second;
    COHORT_RETURN_IF_ERROR(master::ValidateTeamName(team, "team"));
  } else {
    COHORT_ASSIGN_OR_RETURN(team, auth::TeamForJobs(call.caller, master::kDefaultTeam));
  }
  return team;
}

Status ApiServer::MissingBlobs(const Call& call) {
  COHORT_RETURN_IF_ERROR(CheckQuery(call.request, {}));
  auto doc = ParseJson(call.request.body);
  const Json* list = nullptr;
  if (doc.ok() && doc->is_object() && doc->contains("sha256")) list = &(*doc)["sha256"];
  if (!list || !list->is_array() || doc->size() != 1) {
    return Status::InvalidArgument(
        R"(the body must be {"sha256": ["<64 hex digits>", ...]}, at most 1000 of them)");
  }
  if (list->size() > kMaxBlobsAsked) {
    return Status::InvalidArgument(fmt::format("sha256: {} hashes; ask about at most {} at once",
                                               list->size(), kMaxBlobsAsked));
  }
  std::vector<std::string> asked;
  for (size_t i = 0; i < list->size(); ++i) {
    const Json& sha = (*list)[i];
    if (!sha.is_string() || !store::IsSha256Hex(sha.get_ref<const std::string&>())) {
      return Status::InvalidArgument(
          fmt::format("sha256[{}]: must be a SHA-256 in 64 lowercase hex digits", i));
    }
    asked.push_back(sha.get<std::string>());
  }
  return ReadStore(call,
                   [asked = std::move(asked)](store::ObjectStore& store) -> StatusOr<HttpResponse> {
                     Json missing = Json::array();
                     std::set<std::string_view> seen;
                     for (const auto& sha : asked) {
                       if (!seen.insert(sha).second) continue;
                       auto info = store.Head(store::BlobKey(sha));
                       if (info.status().code() == StatusCode::kNotFound) {
                         missing.push_back(sha);
                       } else if (!info.ok()) {
                         return info.status();
                       }
                     }
                     return JsonResponse(200, Json{{"missing", std::move(missing)}});
                   });
}

Status ApiServer::PutBlob(const Call& call) {
  COHORT_RETURN_IF_ERROR(CheckQuery(call.request, {}));
  // Whoever may put a dataset anywhere may upload its chunks; a chunk is no one's until a
  // version names it.
  COHORT_RETURN_IF_ERROR(MayUpload(call.caller, "dataset chunks"));
  const std::string& sha = call.params.at("sha256");
  if (!store::IsSha256Hex(sha)) {
    return Status::InvalidArgument(
        "the path's hash must be the chunk's SHA-256 in 64 lowercase hex digits");
  }
  if (call.request.body.empty()) {
    return Status::InvalidArgument(
        fmt::format("the body is the chunk's bytes: 1 to {} of them", kMaxDatasetChunkBytes));
  }
  return ReadStore(
      call, [sha, body = call.request.body](store::ObjectStore& store) -> StatusOr<HttpResponse> {
        COHORT_ASSIGN_OR_RETURN(std::string actual, store::Sha256Hex(body));
        if (actual != sha) {
          return Status::InvalidArgument(fmt::format(
              "the body's SHA-256 is {}, not {} as the path says: the chunk was changed or cut "
              "short on the way",
              actual, sha));
        }
        const std::string key = store::BlobKey(sha);
        const auto size = static_cast<int64_t>(body.size());
        auto info = store.Head(key);
        if (info.ok() && info->size == size) {
          return JsonResponse(200, Json{{"sha256", sha}, {"size", size}, {"stored", false}});
        }
        if (!info.ok() && info.status().code() != StatusCode::kNotFound) return info.status();
        COHORT_RETURN_IF_ERROR(store.Put(key, body));
        return JsonResponse(201, Json{{"sha256", sha}, {"size", size}, {"stored", true}});
      });
}

Status ApiServer::CommitDataset(const Call& call) {
  COHORT_RETURN_IF_ERROR(CheckQuery(call.request, {"team"}));
  const std::string& name = call.params.at("name");
  COHORT_RETURN_IF_ERROR(CheckDatasetName(name));
  COHORT_ASSIGN_OR_RETURN(std::string team, DatasetTeam(call));
  if (!auth::CanSubmitTo(call.caller, team)) {
    return Status::PermissionDenied(
        fmt::format("{} may not put datasets in team {}: its members and admins may",
                    call.caller.Describe(), team));
  }
  if (!master_.teams().Exists(team)) {
    return Status::NotFound(fmt::format("team {} does not exist", team));
  }
  // The body (up to 32 MiB of JSON) is read on the store worker, never on the event loop.
  return ReadStore(
      call,
      [catalog = datasets_, body = call.request.body, name, team, user = call.caller.name,
       now = master_.Now(), quota = master_.config().store_quota_per_team](
          store::ObjectStore&) -> StatusOr<HttpResponse> {
        COHORT_ASSIGN_OR_RETURN(DatasetVersion draft, DraftOf(body));
        draft.name = name;
        draft.team = team;
        draft.user = user;
        draft.created_at = now;
        COHORT_ASSIGN_OR_RETURN(DatasetVersion v, catalog->Commit(std::move(draft), quota));
        return JsonResponse(201, Json{{"name", v.name},
                                      {"version", v.version},
                                      {"team", v.team},
                                      {"public", v.is_public},
                                      {"file_count", v.file_count},
                                      {"bytes", v.bytes}});
      });
}

Status ApiServer::ListDatasets(const Call& call) {
  COHORT_RETURN_IF_ERROR(CheckQuery(call.request, {"team", "after", "limit"}));
  COHORT_ASSIGN_OR_RETURN(
      size_t limit, PageLimit(call.request, kDefaultDatasetPage, kMaxDatasetPage, "datasets"));
  auto query = [&](const char* key) {
    auto it = call.request.query.find(key);
    return it == call.request.query.end() ? std::string() : it->second;
  };
  std::string team = query("team");
  if (!team.empty()) COHORT_RETURN_IF_ERROR(master::ValidateTeamName(team, "team"));
  // The cursor: the last dataset of the page before, as TEAM/NAME.
  std::pair<std::string, std::string> after;
  if (std::string cursor = query("after"); !cursor.empty()) {
    COHORT_ASSIGN_OR_RETURN(DatasetRef ref, ParseDatasetRef(cursor, "after"));
    after = {ref.team, ref.name};
  }
  return ReadStore(
      call,
      [catalog = datasets_, viewer = ViewerOf(call.caller), team, after,
       limit](store::ObjectStore&) -> StatusOr<HttpResponse> {
        COHORT_RETURN_IF_ERROR(catalog->Load());
        Json list = Json::array();
        bool more = false;
        // One entry per dataset, of the versions the caller sees: in (team, name) order.
        Json* entry = nullptr;
        for (const DatasetVersion* v : catalog->All()) {
          if (!viewer.Sees(*v) || (!team.empty() && v->team != team)) continue;
          if (std::make_pair(v->team, v->name) <= after) continue;
          if (!entry || (*entry)["team"] != v->team || (*entry)["name"] != v->name) {
            if (list.size() == limit) {
              more = true;
              break;
            }
            list.push_back(Json{{"team", v->team}, {"name", v->name}, {"versions", 0}});
            entry = &list.back();
          }
          (*entry)["versions"] = (*entry)["versions"].get<int64_t>() + 1;
          (*entry)["latest"] = VersionSummary(*v);
        }
        return JsonResponse(200, Json{{"datasets", std::move(list)}, {"more", more}});
      });
}

Status ApiServer::GetDataset(const Call& call) {
  COHORT_RETURN_IF_ERROR(CheckQuery(call.request, {"team"}));
  const std::string& name = call.params.at("name");
  COHORT_RETURN_IF_ERROR(CheckDatasetName(name));
  COHORT_ASSIGN_OR_RETURN(std::string team, DatasetTeam(call));
  return ReadStore(call,
                   [catalog = datasets_, viewer = ViewerOf(call.caller), team,
                    name](store::ObjectStore&) -> StatusOr<HttpResponse> {
                     COHORT_RETURN_IF_ERROR(catalog->Load());
                     Json versions = Json::array();
                     for (const DatasetVersion* v : catalog->Versions(team, name)) {
                       if (viewer.Sees(*v)) versions.push_back(VersionSummary(*v));
                     }
                     if (versions.empty()) return NoSuchDataset(team, name);
                     return JsonResponse(
                         200,
                         Json{{"team", team}, {"name", name}, {"versions", std::move(versions)}});
                   });
}

Status ApiServer::GetDatasetVersion(const Call& call) {
  COHORT_RETURN_IF_ERROR(CheckQuery(call.request, {"team", "files"}));
  const std::string& name = call.params.at("name");
  COHORT_RETURN_IF_ERROR(CheckDatasetName(name));
  COHORT_ASSIGN_OR_RETURN(int64_t version, VersionParam(call.params.at("version")));
  COHORT_ASSIGN_OR_RETURN(std::string team, DatasetTeam(call));
  bool with_files = false;
  if (auto it = call.request.query.find("files"); it != call.request.query.end()) {
    if (it->second != "true" && it->second != "false") {
      return Status::InvalidArgument("files: must be true or false");
    }
    with_files = it->second == "true";
  }
  return ReadStore(call,
                   [catalog = datasets_, viewer = ViewerOf(call.caller), team, name, version,
                    with_files](store::ObjectStore&) -> StatusOr<HttpResponse> {
                     COHORT_RETURN_IF_ERROR(catalog->Load());
                     const DatasetVersion* v = catalog->Find(team, name, version);
                     if (!v || !viewer.Sees(*v)) return NoSuchDataset(team, name, version);
                     if (!with_files) return JsonResponse(200, VersionSummary(*v));
                     COHORT_ASSIGN_OR_RETURN(DatasetVersion manifest,
                                             catalog->Manifest(team, name, version));
                     return JsonResponse(200, DatasetVersionJson(manifest, true));
                   });
}

Status ApiServer::DeleteDatasetVersion(const Call& call) {
  COHORT_RETURN_IF_ERROR(CheckQuery(call.request, {"team"}));
  const std::string& name = call.params.at("name");
  COHORT_RETURN_IF_ERROR(CheckDatasetName(name));
  COHORT_ASSIGN_OR_RETURN(int64_t version, VersionParam(call.params.at("version")));
  COHORT_ASSIGN_OR_RETURN(std::string team, DatasetTeam(call));
  COHORT_RETURN_IF_ERROR(CheckNoJobUses(master_, team, name, version));
  const bool may_delete = auth::CanSubmitTo(call.caller, team);
  return ReadStore(
      call,
      [catalog = datasets_, viewer = ViewerOf(call.caller), team, name, version, may_delete,
       describe = call.caller.Describe()](store::ObjectStore&) -> StatusOr<HttpResponse> {
        COHORT_RETURN_IF_ERROR(catalog->Load());
        const DatasetVersion* v = catalog->Find(team, name, version);
        if (!v || !viewer.Sees(*v)) return NoSuchDataset(team, name, version);
        if (!may_delete) {
          return Status::PermissionDenied(fmt::format(
              "{} may not delete versions of team {}'s datasets: its members and admins may",
              describe, team));
        }
        COHORT_RETURN_IF_ERROR(catalog->Delete(team, name, version));
        return JsonResponse(
            200, Json{{"team", team}, {"name", name}, {"version", version}, {"deleted", true}});
      });
}

Status ApiServer::CommitContext(const Call& call) {
  COHORT_RETURN_IF_ERROR(CheckQuery(call.request, {}));
  // As for chunks: a job's code is no one's until a job names it.
  COHORT_RETURN_IF_ERROR(MayUpload(call.caller, "a job's code"));
  // Read, checked and written on the store worker: the body may be megabytes of JSON.
  return ReadStore(
      call, [body = call.request.body](store::ObjectStore& store) -> StatusOr<HttpResponse> {
        auto doc = ParseJson(body);
        if (!doc.ok() || !doc->is_object() || !doc->contains("files") || doc->size() != 1) {
          return Status::InvalidArgument(
              R"(the body must be {"files": [{"path", "size", "sha256", "chunks": [{"sha256", "size"}], "executable"}]})");
        }
        COHORT_ASSIGN_OR_RETURN(std::vector<DatasetFile> files,
                                DatasetFilesFromJson((*doc)["files"], "files"));
        if (files.size() > store::kMaxContextFiles) {
          return Status::InvalidArgument(fmt::format("files: {} files; a job's code is at most {}",
                                                     files.size(), store::kMaxContextFiles));
        }
        COHORT_RETURN_IF_ERROR(store::CheckDatasetFiles(files));
        const int64_t bytes = store::DatasetBytes(files);
        if (bytes > store::kMaxContextBytes) {
          return Status::InvalidArgument(fmt::format("files: {} bytes; a job's code is at most {}",
                                                     bytes, store::kMaxContextBytes));
        }
        COHORT_RETURN_IF_ERROR(store::CheckChunksStored(store, files));
        // Named by its own bytes: the same code sent twice is one manifest.
        const std::string manifest = Json{{"files", DatasetFilesJson(files)}}.dump();
        COHORT_ASSIGN_OR_RETURN(std::string sha, store::Sha256Hex(manifest));
        const std::string key = store::ContextKey(sha);
        auto there = store.Head(key);
        if (there.status().code() == StatusCode::kNotFound) {
          COHORT_RETURN_IF_ERROR(store.Put(key, manifest));
        } else {
          COHORT_RETURN_IF_ERROR(there.status());
        }
        return JsonResponse(201,
                            Json{{"context", sha}, {"file_count", files.size()}, {"bytes", bytes}});
      });
}

Status ApiServer::PinDatasets(const Call& call, std::vector<DatasetRef> refs,
                              const std::string& team, Pinned then) {
  for (DatasetRef& ref : refs) {
    if (ref.team.empty()) ref.team = team;
  }
  auto pinned = std::make_shared<StatusOr<std::vector<DatasetRef>>>(
      Status::Internal("the datasets were not pinned"));
  // As ReadStore: a loop run by hand (the tests) waits for the answer.
  auto busy =
      std::make_shared<boost::asio::executor_work_guard<boost::asio::io_context::executor_type>>(
          ioc_.get_executor());
  auto pin = [catalog = datasets_, viewer = ViewerOf(call.caller), refs = std::move(refs),
              pinned](store::ObjectStore&) -> StatusOr<HttpResponse> {
    if (Status loaded = catalog->Load(); !loaded.ok()) {
      *pinned = Status::Unavailable(fmt::format(
          "the job names datasets, and their list cannot be read from the store: {}; try again",
          loaded.message()));
      return HttpResponse{};
    }
    std::vector<DatasetRef> out;
    for (size_t i = 0; i < refs.size(); ++i) {
      DatasetRef ref = refs[i];
      const DatasetVersion* found = nullptr;
      if (ref.version) {
        found = catalog->Find(ref.team, ref.name, *ref.version);
      } else {
        // The latest the caller may read.
        auto versions = catalog->Versions(ref.team, ref.name);
        for (auto it = versions.rbegin(); it != versions.rend() && !found; ++it) {
          if (viewer.Sees(**it)) found = *it;
        }
      }
      if (!found || !viewer.Sees(*found)) {
        *pinned = Status::NotFound(fmt::format(
            "datasets[{}]: {}", i, NoSuchDataset(ref.team, ref.name, ref.version).message()));
        return HttpResponse{};
      }
      ref.version = found->version;
      out.push_back(std::move(ref));
    }
    *pinned = std::move(out);
    return HttpResponse{};
  };
  return store_reads_->Start(
      std::move(pin),
      [pinned, then = std::move(then), busy](StatusOr<HttpResponse>) { then(std::move(*pinned)); });
}

}  // namespace cohort::api
