// Environment secrets, per user and per team (docs/security.md, "Environment secrets"): what
// the master keeps, who they resolve for, and the bounds on them.
//
// Every value is held in memory (a task's launch is built on every sync, and must not wait for
// the disk) and in the state store; kMaxSecretsPerOwner bounds both. Every change is written to
// the store before memory changes, so a failed write changes nothing. Like the master, not
// thread-safe: its event-loop thread only. Nothing here logs or returns a value in a message.
#pragma once

#include <map>
#include <string>
#include <string_view>
#include <tuple>
#include <vector>

#include "common/status.h"
#include "common/time.h"
#include "model/secret.h"
#include "state/state_store.h"

namespace cohort::master {

class Secrets {
 public:
  Secrets(state::StateStore& store, const Clock& clock) : store_(store), clock_(clock) {}

  Status Load();

  // Creates or replaces the secret `name` of `owner`, and returns it (its value included: the
  // caller answers without it). kInvalidArgument for a bad name or value (model/secret.h);
  // kFailedPrecondition when a new secret would give the owner more than kMaxSecretsPerOwner.
  StatusOr<Secret> Set(SecretScope scope, const std::string& owner, const std::string& name,
                       std::string value);
  // kNotFound, saying how to list them.
  Status Delete(SecretScope scope, const std::string& owner, const std::string& name);
  // Every secret of a user or team that is going away: one created later under the same name
  // must not find them.
  Status DeleteAll(SecretScope scope, const std::string& owner);
  // The owner's secrets by name.
  std::vector<const Secret*> List(SecretScope scope, const std::string& owner) const;
  // Every team's secrets, by team and name.
  std::vector<const Secret*> ListTeams() const;
  // What a job of `user` in `team` gets for `name`: the user's own secret, else the team's;
  // nullptr if neither has one.
  const Secret* Resolve(const std::string& user, const std::string& team,
                        const std::string& name) const;

 private:
  using Key = std::tuple<SecretScope, std::string, std::string>;  // scope, owner, name

  size_t CountOf(SecretScope scope, const std::string& owner) const;

  state::StateStore& store_;
  const Clock& clock_;
  std::map<Key, Secret> secrets_;
};

}  // namespace cohort::master
