#include "os/proc_view.h"

#include <errno.h>
#include <sched.h>
#include <sys/mount.h>

namespace cohort {

const char* HideOtherAccountsProcesses() {
  if (::unshare(CLONE_NEWNS) != 0) return "unshare(CLONE_NEWNS)";
  if (::mount(nullptr, "/", nullptr, MS_REC | MS_SLAVE, nullptr) != 0) {
    return "making the mounts slaves of the machine's";
  }
  // Not "hidepid=2" where "invisible" is refused: before Linux 5.8 every /proc of a PID
  // namespace shares its options, and that would hide processes from the whole machine.
  if (::mount("proc", "/proc", "proc", MS_NOSUID | MS_NODEV | MS_NOEXEC, "hidepid=invisible") !=
      0) {
    return errno == EINVAL ? "mounting /proc with hidepid=invisible (Linux 5.8 or later)"
                           : "mounting /proc with hidepid=invisible";
  }
  return nullptr;
}

}  // namespace cohort
