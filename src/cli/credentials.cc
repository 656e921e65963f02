#include "cli/credentials.h"

#include <fmt/format.h>
#include <sys/stat.h>

#include <cstdlib>
#include <filesystem>

#include "model/json.h"
#include "os/durable_file.h"
#include "os/process.h"

namespace cohort::cli {
namespace {

// "http://host:7420/" and "http://host:7420" are one master.
std::string Key(std::string url) {
  while (!url.empty() && url.back() == '/') url.pop_back();
  return url;
}

Json Load() {
  auto doc = ParseJson(ReadFileOrEmpty(CredentialsPath()));
  if (!doc.ok() || !doc->is_object() || !(*doc)["masters"].is_object()) {
    return Json{{"masters", Json::object()}};
  }
  return *doc;
}

}  // namespace

std::string CredentialsPath() {
  const char* xdg = std::getenv("XDG_CONFIG_HOME");
  if (xdg && *xdg) return std::string(xdg) + "/cohort/credentials.json";
  const char* home = std::getenv("HOME");
  return std::string(home && *home ? home : "/tmp") + "/.config/cohort/credentials.json";
}

std::optional<std::string> SavedToken(const std::string& master_url) {
  Json doc = Load();
  auto it = doc["masters"].find(Key(master_url));
  if (it == doc["masters"].end() || !it->is_object()) return std::nullopt;
  auto token = it->find("token");
  if (token == it->end() || !token->is_string()) return std::nullopt;
  return token->get<std::string>();
}

Status SaveToken(const std::string& master_url, const std::string& token) {
  Json doc = Load();
  if (token.empty()) {
    doc["masters"].erase(Key(master_url));
  } else {
    doc["masters"][Key(master_url)] = Json{{"token", token}};
  }
  std::string path = CredentialsPath();
  std::error_code ec;
  std::filesystem::create_directories(std::filesystem::path(path).parent_path(), ec);
  if (ec)
    return Status::Internal(fmt::format("creating the directory of {}: {}", path, ec.message()));
  // Exactly 0600, whatever the mode of an older file.
  COHORT_RETURN_IF_ERROR(WriteFileAtomically(path, doc.dump(2) + "\n", 0600));
  return Status::Ok();
}

}  // namespace cohort::cli
