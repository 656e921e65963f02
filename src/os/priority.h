// The CPU priority of this process, as the scheduler weighs it against others. Tasks and their
// supervisors run below the agent, so that however many of them want the CPU at once (a
// thousand tasks ending together), the agent still gets its share and keeps syncing
// (docs/reliability.md, "The agent outlives its own tasks").
#pragma once

namespace cohort {

// Lowers this process's priority to `nice` (0 to 19; it is never raised): its own nice value,
// which its children inherit, and, if it leads its session and the kernel groups processes by
// session for the scheduler (autogroup, /proc/self/autogroup), its session's group, for there a
// process's nice value weighs only against the rest of its own session. Returns null, or the
// call that failed and left the priority higher than asked.
const char* LowerPriority(int nice);

// This process's nice value, and its session group's (0 where there is no autogroup).
int NiceValue();
int SessionGroupNiceValue();

}  // namespace cohort
