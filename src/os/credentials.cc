#include "os/credentials.h"

#include <errno.h>
#include <fmt/format.h>
#include <grp.h>
#include <pwd.h>
#include <sys/prctl.h>
#include <unistd.h>

#include <cstring>
#include <vector>

namespace cohort {
namespace {

// getpwnam_r and getpwuid_r share their contract: `lookup(buf, size, &entry, &found)`.
template <typename Lookup>
StatusOr<Account> LookUp(const std::string& what, Lookup lookup) {
  long hint = ::sysconf(_SC_GETPW_R_SIZE_MAX);
  std::vector<char> buf(hint > 0 ? static_cast<size_t>(hint) : 1024);
  passwd entry{};
  passwd* found = nullptr;
  int err;
  // ERANGE: an entry larger than the buffer (long GECOS fields, NSS back ends); bounded.
  while ((err = lookup(buf.data(), buf.size(), &entry, &found)) == ERANGE &&
         buf.size() < (1u << 20)) {
    buf.resize(buf.size() * 2);
  }
  // getpwnam_r answers "no such user" with 0 and no entry, though some NSS back ends say
  // ENOENT or ESRCH instead.
  if (found == nullptr && (err == 0 || err == ENOENT || err == ESRCH)) {
    return Status::NotFound(fmt::format("no Unix account {}", what));
  }
  if (found == nullptr) {
    return Status::Internal(
        fmt::format("cannot read the user database for {}: {}", what, strerror(err)));
  }
  return Account{entry.pw_uid, entry.pw_gid, entry.pw_name ? entry.pw_name : "",
                 entry.pw_dir ? entry.pw_dir : "", entry.pw_shell ? entry.pw_shell : ""};
}

}  // namespace

StatusOr<Account> AccountNamed(const std::string& name) {
  return LookUp(fmt::format("\"{}\"", name), [&](char* buf, size_t size, passwd* e, passwd** r) {
    return ::getpwnam_r(name.c_str(), e, buf, size, r);
  });
}

StatusOr<Account> AccountOfUid(uid_t uid) {
  return LookUp(fmt::format("with uid {}", uid),
                [&](char* buf, size_t size, passwd* e, passwd** r) {
                  return ::getpwuid_r(uid, e, buf, size, r);
                });
}

const char* DropPrivileges(uid_t uid, gid_t gid) {
  // Groups first: once the uid is not root, neither setgroups nor setgid is allowed any more.
  if (::setgroups(1, &gid) != 0) return "setgroups";
  if (::setgid(gid) != 0) return "setgid";
  if (::setuid(uid) != 0) return "setuid";
  uid_t ruid, euid, suid;
  gid_t rgid, egid, sgid;
  if (::getresuid(&ruid, &euid, &suid) != 0) return "getresuid";
  if (::getresgid(&rgid, &egid, &sgid) != 0) return "getresgid";
  if (ruid != uid || euid != uid || suid != uid) {
    errno = EPERM;
    return "setuid left another real, effective or saved uid";
  }
  if (rgid != gid || egid != gid || sgid != gid) {
    errno = EPERM;
    return "setgid left another real, effective or saved gid";
  }
  if (uid != 0 && (::setuid(0) == 0 || ::seteuid(0) == 0)) {
    errno = EPERM;
    return "regaining root after setuid succeeded";
  }
  if (gid != 0 && uid != 0 && ::setgid(0) == 0) {
    errno = EPERM;
    return "regaining group root after setgid succeeded";
  }
  return ForbidNewPrivileges();
}

const char* ForbidNewPrivileges() {
  if (::prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0) return "prctl(PR_SET_NO_NEW_PRIVS)";
  return nullptr;
}

}  // namespace cohort
