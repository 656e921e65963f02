#include "model/dataset.h"

#include <fmt/format.h>

#include <charconv>
#include <limits>

#include "model/json_errors.h"

namespace cohort {
namespace {

using Json = nlohmann::json;

// Text a client sent, as an error quotes it: JSON-escaped and cut short.
std::string Quoted(std::string_view text) {
  std::string shown(text.substr(0, 80));
  return Json(shown).dump(-1, ' ', false, Json::error_handler_t::replace) +
         (text.size() > shown.size() ? "..." : "");
}

bool NameChar(char c) {
  return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '.' || c == '_' || c == '-';
}

StatusOr<int64_t> ParseVersion(std::string_view text, std::string_view field) {
  int64_t version = 0;
  auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), version);
  if (text.empty() || error != std::errc() || end != text.data() + text.size() || version < 1 ||
      text.front() == '0') {
    return Status::InvalidArgument(fmt::format(
        "{}: version {} is not a version number: versions are 1, 2, 3, ...", field, Quoted(text)));
  }
  return version;
}

// The member `key` of `doc` if it has the type `is`, else kInvalidArgument naming it.
template <typename Check>
StatusOr<const Json*> Member(const Json& doc, std::string_view field, const char* key, Check is,
                             std::string_view what) {
  auto it = doc.find(key);
  if (it == doc.end()) {
    return Status::InvalidArgument(fmt::format("{}.{}: missing; must be {}", field, key, what));
  }
  if (!is(*it)) {
    return Status::InvalidArgument(
        fmt::format("{}.{}: must be {}, not {}", field, key, what, DescribeJsonValue(*it)));
  }
  return &*it;
}

bool IsText(const Json& j) { return j.is_string(); }
bool IsCount(const Json& j) {
  return j.is_number_integer() && (j.is_number_unsigned() || j.get<int64_t>() >= 0);
}

StatusOr<int64_t> CountOf(const Json& doc, std::string_view field, const char* key) {
  COHORT_ASSIGN_OR_RETURN(const Json* j, Member(doc, field, key, IsCount, "a whole number >= 0"));
  if (j->is_number_unsigned() &&
      j->get<uint64_t>() > static_cast<uint64_t>(std::numeric_limits<int64_t>::max())) {
    return Status::InvalidArgument(fmt::format("{}.{}: too large", field, key));
  }
  return j->get<int64_t>();
}

StatusOr<std::string> TextOf(const Json& doc, std::string_view field, const char* key) {
  COHORT_ASSIGN_OR_RETURN(const Json* j, Member(doc, field, key, IsText, "a string"));
  return j->get<std::string>();
}

}  // namespace

Status CheckDatasetName(std::string_view name, std::string_view field) {
  bool ok = !name.empty() && name.size() <= kMaxDatasetNameLength && name.front() != '.' &&
            name.front() != '_' && name.front() != '-';
  for (char c : name) ok = ok && NameChar(c);
  if (ok) return Status::Ok();
  return Status::InvalidArgument(fmt::format(
      "{}: {} is not a dataset name: use 1 to {} lowercase letters, digits, '.', '_' or '-', "
      "starting with a letter or digit",
      field, Quoted(name), kMaxDatasetNameLength));
}

StatusOr<DatasetRef> ParseDatasetRef(std::string_view text, std::string_view field) {
  DatasetRef ref;
  std::string_view rest = text;
  if (auto slash = rest.find('/'); slash != std::string_view::npos) {
    std::string_view team = rest.substr(0, slash);
    // The team's own rules are the master's (its teams exist there); here only what keeps the
    // reference readable.
    if (team.empty() || team.size() > 64 || team.find_first_of(":/") != std::string_view::npos) {
      return Status::InvalidArgument(
          fmt::format("{}: {}: the team before '/' must be a team's name (TEAM/NAME[:VERSION])",
                      field, Quoted(text)));
    }
    ref.team = team;
    rest.remove_prefix(slash + 1);
  }
  if (auto colon = rest.find(':'); colon != std::string_view::npos) {
    COHORT_ASSIGN_OR_RETURN(ref.version, ParseVersion(rest.substr(colon + 1), field));
    rest = rest.substr(0, colon);
  }
  COHORT_RETURN_IF_ERROR(CheckDatasetName(rest, fmt::format("{} (name)", field)));
  ref.name = rest;
  return ref;
}

std::string FormatDatasetRef(const DatasetRef& ref) {
  std::string text = ref.team.empty() ? ref.name : ref.team + "/" + ref.name;
  if (ref.version) text += fmt::format(":{}", *ref.version);
  return text;
}

Json DatasetFilesJson(const std::vector<DatasetFile>& files) {
  Json list = Json::array();
  for (const auto& f : files) {
    Json chunks = Json::array();
    for (const auto& c : f.chunks) chunks.push_back(Json{{"sha256", c.sha256}, {"size", c.size}});
    Json file{{"path", f.path}, {"size", f.size}, {"sha256", f.sha256}, {"chunks", chunks}};
    if (f.executable) file["executable"] = true;
    list.push_back(std::move(file));
  }
  return list;
}

Json DatasetVersionJson(const DatasetVersion& v, bool with_files) {
  Json doc{{"name", v.name},
           {"version", v.version},
           {"team", v.team},
           {"public", v.is_public},
           {"user", v.user},
           {"created_at", FormatTimestamp(v.created_at)},
           {"file_count", v.file_count},
           {"bytes", v.bytes}};
  if (with_files) doc["files"] = DatasetFilesJson(v.files);
  return doc;
}

StatusOr<std::vector<DatasetFile>> DatasetFilesFromJson(const Json& files, std::string_view field) {
  if (!files.is_array()) {
    return Status::InvalidArgument(
        fmt::format("{}: must be a list of files, not {}", field, DescribeJsonValue(files)));
  }
  if (files.size() > kMaxDatasetFiles) {
    return Status::InvalidArgument(fmt::format(
        "{}: {} files; a dataset version holds at most {} (pack many small files into shards: "
        "cohort data pack)",
        field, files.size(), kMaxDatasetFiles));
  }
  std::vector<DatasetFile> out;
  out.reserve(files.size());
  for (size_t i = 0; i < files.size(); ++i) {
    const Json& f = files[i];
    std::string at = fmt::format("{}[{}]", field, i);
    if (!f.is_object()) {
      return Status::InvalidArgument(
          fmt::format("{}: must be an object, not {}", at, DescribeJsonValue(f)));
    }
    DatasetFile file;
    COHORT_ASSIGN_OR_RETURN(file.path, TextOf(f, at, "path"));
    COHORT_ASSIGN_OR_RETURN(file.size, CountOf(f, at, "size"));
    COHORT_ASSIGN_OR_RETURN(file.sha256, TextOf(f, at, "sha256"));
    COHORT_ASSIGN_OR_RETURN(
        const Json* chunks,
        Member(
            f, at, "chunks", [](const Json& j) { return j.is_array(); }, "a list of chunks"));
    for (size_t k = 0; k < chunks->size(); ++k) {
      const Json& c = (*chunks)[k];
      std::string chunk_at = fmt::format("{}.chunks[{}]", at, k);
      if (!c.is_object()) {
        return Status::InvalidArgument(
            fmt::format("{}: must be an object, not {}", chunk_at, DescribeJsonValue(c)));
      }
      DatasetChunk chunk;
      COHORT_ASSIGN_OR_RETURN(chunk.sha256, TextOf(c, chunk_at, "sha256"));
      COHORT_ASSIGN_OR_RETURN(chunk.size, CountOf(c, chunk_at, "size"));
      file.chunks.push_back(std::move(chunk));
    }
    if (auto it = f.find("executable"); it != f.end()) {
      if (!it->is_boolean()) {
        return Status::InvalidArgument(fmt::format("{}.executable: must be true or false, not {}",
                                                   at, DescribeJsonValue(*it)));
      }
      file.executable = it->get<bool>();
    }
    out.push_back(std::move(file));
  }
  return out;
}

StatusOr<DatasetVersion> DatasetVersionFromJson(const Json& doc) {
  if (!doc.is_object()) {
    return Status::InvalidArgument(
        fmt::format("manifest: must be an object, not {}", DescribeJsonValue(doc)));
  }
  DatasetVersion v;
  COHORT_ASSIGN_OR_RETURN(v.name, TextOf(doc, "manifest", "name"));
  COHORT_ASSIGN_OR_RETURN(v.version, CountOf(doc, "manifest", "version"));
  COHORT_ASSIGN_OR_RETURN(v.team, TextOf(doc, "manifest", "team"));
  COHORT_ASSIGN_OR_RETURN(const Json* is_public,
                          Member(
                              doc, "manifest", "public",
                              [](const Json& j) { return j.is_boolean(); }, "true or false"));
  v.is_public = is_public->get<bool>();
  COHORT_ASSIGN_OR_RETURN(v.user, TextOf(doc, "manifest", "user"));
  COHORT_ASSIGN_OR_RETURN(std::string created, TextOf(doc, "manifest", "created_at"));
  auto created_at = ParseTimestamp(created);
  if (!created_at.ok()) {
    return Status::InvalidArgument(
        fmt::format("manifest.created_at: {}", created_at.status().message()));
  }
  v.created_at = *created_at;
  COHORT_ASSIGN_OR_RETURN(v.file_count, CountOf(doc, "manifest", "file_count"));
  COHORT_ASSIGN_OR_RETURN(v.bytes, CountOf(doc, "manifest", "bytes"));
  if (auto files = doc.find("files"); files != doc.end()) {
    COHORT_ASSIGN_OR_RETURN(v.files, DatasetFilesFromJson(*files, "manifest.files"));
  }
  return v;
}

}  // namespace cohort
