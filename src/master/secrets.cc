#include "master/secrets.h"

#include <fmt/format.h>
#include <spdlog/spdlog.h>

namespace cohort::master {

Status Secrets::Load() {
  COHORT_ASSIGN_OR_RETURN(auto loaded, store_.LoadSecrets());
  secrets_.clear();
  for (auto& s : loaded) {
    Key key{s.scope, s.owner, s.name};
    secrets_.emplace(std::move(key), std::move(s));
  }
  return Status::Ok();
}

StatusOr<Secret> Secrets::Set(SecretScope scope, const std::string& owner, const std::string& name,
                              std::string value) {
  COHORT_RETURN_IF_ERROR(ValidateSecretName(name));
  COHORT_RETURN_IF_ERROR(ValidateSecretValue(value));
  Key key{scope, owner, name};
  if (!secrets_.count(key) && CountOf(scope, owner) >= kMaxSecretsPerOwner) {
    return Status::FailedPrecondition(fmt::format(
        "{} {} already has {} secrets, the most one owner may have; delete one first (cohort "
        "secret delete NAME{})",
        SecretScopeName(scope), owner, kMaxSecretsPerOwner,
        scope == SecretScope::kTeam ? " --team " + owner : ""));
  }
  Secret secret{scope, owner, name, std::move(value), clock_.Now()};
  COHORT_RETURN_IF_ERROR(store_.SaveSecret(secret));
  spdlog::info("secret {} of {} {} set", name, SecretScopeName(scope), owner);
  secrets_[key] = secret;
  return secret;
}

Status Secrets::Delete(SecretScope scope, const std::string& owner, const std::string& name) {
  Key key{scope, owner, name};
  if (!secrets_.count(key)) {
    return Status::NotFound(fmt::format("{} {} has no secret {}; see `cohort secret list`",
                                        SecretScopeName(scope), owner, name));
  }
  COHORT_RETURN_IF_ERROR(store_.DeleteSecret(scope, owner, name));
  secrets_.erase(key);
  spdlog::info("secret {} of {} {} deleted", name, SecretScopeName(scope), owner);
  return Status::Ok();
}

Status Secrets::DeleteAll(SecretScope scope, const std::string& owner) {
  for (const Secret* s : List(scope, owner)) {
    std::string name = s->name;  // `s` goes with its entry
    COHORT_RETURN_IF_ERROR(Delete(scope, owner, name));
  }
  return Status::Ok();
}

std::vector<const Secret*> Secrets::List(SecretScope scope, const std::string& owner) const {
  std::vector<const Secret*> out;
  for (auto it = secrets_.lower_bound(Key{scope, owner, ""});
       it != secrets_.end() && std::get<0>(it->first) == scope && std::get<1>(it->first) == owner;
       ++it) {
    out.push_back(&it->second);
  }
  return out;
}

std::vector<const Secret*> Secrets::ListTeams() const {
  std::vector<const Secret*> out;
  for (auto it = secrets_.lower_bound(Key{SecretScope::kTeam, "", ""}); it != secrets_.end();
       ++it) {
    out.push_back(&it->second);
  }
  return out;
}

const Secret* Secrets::Resolve(const std::string& user, const std::string& team,
                               const std::string& name) const {
  for (const Key& key :
       {Key{SecretScope::kUser, user, name}, Key{SecretScope::kTeam, team, name}}) {
    auto it = secrets_.find(key);
    if (it != secrets_.end()) return &it->second;
  }
  return nullptr;
}

size_t Secrets::CountOf(SecretScope scope, const std::string& owner) const {
  return List(scope, owner).size();
}

}  // namespace cohort::master
