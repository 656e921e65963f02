#include "cohortd/bootstrap.h"

#include <fmt/format.h>
#include <pwd.h>
#include <spdlog/spdlog.h>
#include <sys/stat.h>
#include <unistd.h>

#include "auth/token.h"
#include "common/strings.h"
#include "os/durable_file.h"
#include "os/process.h"

namespace cohort::cohortd {
namespace {

// Mints a token, writes it to `path` (0600), then stores its record.
StatusOr<std::string> IssueToFile(master::Master& master, TokenKind kind,
                                  const std::string& subject, const std::string& description,
                                  const std::string& path) {
  COHORT_ASSIGN_OR_RETURN(auth::MintedToken minted, auth::MintToken());
  COHORT_RETURN_IF_ERROR(WriteFileAtomically(path, minted.token + "\n", 0600));
  TokenRecord record;
  record.id = minted.id;
  record.kind = kind;
  record.subject = subject;
  record.description = description;
  record.hash = minted.hash;
  record.created_at = master.Now();
  COHORT_RETURN_IF_ERROR(master.accounts().Add(record));
  return minted.id;
}

Status Restrict(const std::string& path, mode_t mode) {
  if (::chmod(path.c_str(), mode) == 0 || errno == ENOENT) return Status::Ok();
  return Status::Internal(fmt::format("chmod {:o} {}: {}", mode, path, std::strerror(errno)));
}

}  // namespace

std::string ProcessUserName() {
  if (const passwd* pw = ::getpwuid(::geteuid()); pw && pw->pw_name) return pw->pw_name;
  return fmt::format("uid{}", ::geteuid());
}

Status BootstrapAccess(master::Master& master, const std::string& data_dir,
                       const std::string& admin_user) {
  COHORT_RETURN_IF_ERROR(Restrict(data_dir, 0711));
  for (const char* file : {"/cohort.db", "/cohort.db-wal", "/cohort.db-shm", "/metrics.db",
                           "/metrics.db-wal", "/metrics.db-shm"}) {
    COHORT_RETURN_IF_ERROR(Restrict(data_dir + file, 0600));
  }
  COHORT_RETURN_IF_ERROR(Restrict(data_dir + "/logs", 0700));

  master::Accounts& accounts = master.accounts();
  if (!accounts.HasUsers()) {
    User admin;
    admin.name = admin_user;
    admin.admin = true;
    admin.teams[master::kDefaultTeam] = TeamRole::kMember;
    COHORT_RETURN_IF_ERROR(accounts.CreateUser(admin).status());
    std::string path = data_dir + "/" + kAdminTokenFile;
    COHORT_ASSIGN_OR_RETURN(std::string id, IssueToFile(master, TokenKind::kUser, admin_user,
                                                        "first admin token", path));
    spdlog::info("first start: user {} is the cluster admin; their token ({}) is in {}", admin_user,
                 id, path);
  }

  std::string join_path = data_dir + "/" + kJoinTokenFile;
  std::string join = std::string(Trim(ReadFileOrEmpty(join_path)));
  auto join_id = auth::TokenId(join);
  const TokenRecord* record = join_id.ok() ? accounts.FindToken(*join_id) : nullptr;
  bool valid = record && record->kind == TokenKind::kJoin && record->ValidAt(master.Now()) &&
               auth::TokenMatches(join, record->hash);
  if (!valid) {
    COHORT_ASSIGN_OR_RETURN(std::string id,
                            IssueToFile(master, TokenKind::kJoin, "", "join token", join_path));
    spdlog::info("agents join with the token ({}) in {}", id, join_path);
  }
  return Status::Ok();
}

}  // namespace cohort::cohortd
