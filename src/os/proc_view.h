// What a task sees of the machine's other processes through /proc (docs/security.md, "Other
// users' processes"). By default any account may read every process's command line in
// /proc/<pid>/cmdline, and other users' jobs put data set paths, hosts and sometimes secrets
// there. A task gets a mount namespace of its own with a /proc that shows only the processes
// of its own account (hidepid=invisible): the others' /proc/<pid> do not exist for it.
//
// Why not a PID namespace: the task's pids would no longer be the agent's (task.pid, signals
// to its process group, adoption after a restart and the sampler all use them), and its first
// process would become an init that ignores signals it has no handler for, so SIGTERM would no
// longer end a plain command. Hiding the other accounts' entries keeps every pid as it was.
#pragma once

namespace cohort {

// In a child about to become a task's account, while it is still root: unshares its mount
// namespace, makes every mount in it a slave of the machine's (nothing mounted here leaks
// out, what the machine mounts later still comes in), and mounts a /proc of its own over
// /proc with hidepid=invisible (Linux 5.8 or later: before, every /proc of the machine shares
// one set of options). Returns null, or the call that failed (errno says why); a
// failure may leave the child in a namespace of its own with the machine's /proc. Makes only
// system calls, as a child of a multi-threaded process may.
const char* HideOtherAccountsProcesses();

}  // namespace cohort
