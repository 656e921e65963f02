// The tokens `cohort login` saved, one per master URL, in the user's config directory:
// $XDG_CONFIG_HOME/cohort/credentials.json, else ~/.config/cohort/credentials.json, mode 0600
// (docs/security.md, "Tokens").
#pragma once

#include <optional>
#include <string>

#include "common/status.h"

namespace cohort::cli {

std::string CredentialsPath();
// The token saved for `master_url`, if any.
std::optional<std::string> SavedToken(const std::string& master_url);
// Saves (or, with an empty token, forgets) the token for `master_url`, keeping the others.
Status SaveToken(const std::string& master_url, const std::string& token);

}  // namespace cohort::cli
