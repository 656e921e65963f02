// The bounds on what comes from outside: job specs (docs/job-spec.md, "Limits"), agents'
// registrations and the pages of lists (docs/api.md). A job spec is kilobytes and a node is one
// machine; these bounds are far above either, and low enough that no sum of them overflows and no
// request holds the master's one event-loop thread for long.
#pragma once

#include <cstddef>
#include <cstdint>

namespace cohort {

inline constexpr int64_t kKiB = 1024;
inline constexpr int64_t kMiB = 1024 * kKiB;
inline constexpr int64_t kTiB = kMiB * kMiB;

// --- Job specs ---

// The whole text of a spec, as a file or a request body; real specs are a few KiB. The bounds
// keep the master's event loop from being held more than a few milliseconds by one spec
// (docs/performance.md): JSON, as `cohort submit` sends it, is read at about 200 MiB/s, YAML,
// for people, at about 2 MiB/s at worst.
inline constexpr int64_t kMaxSpecBytes = 256 * kKiB;
inline constexpr int64_t kMaxYamlSpecBytes = 16 * kKiB;

// Tasks of a job in all (the sum of replicas, elastic maximums included), and so of one group.
inline constexpr int64_t kMaxTasks = 1024;
// Per task; no node offers more (kMaxNodeGpus, kMaxNodeCpus, kMaxNodeMemoryBytes), so a larger
// request could never run, and kMaxTasks times these cannot overflow.
inline constexpr int64_t kMaxTaskGpus = 64;
inline constexpr int64_t kMaxTaskCpus = 16384;
inline constexpr int64_t kMaxTaskMemoryBytes = 64 * kTiB;

// `command`: within what execve(2) takes (128 KiB per string on Linux).
inline constexpr size_t kMaxCommandArgs = 1024;
inline constexpr size_t kMaxCommandBytes = 128 * kKiB;  // all arguments together
// `env`: the task's environment and Cohort's own variables must fit execve(2) together.
inline constexpr size_t kMaxEnvVars = 256;
inline constexpr size_t kMaxEnvNameLength = 256;
inline constexpr size_t kMaxEnvValueBytes = 32 * kKiB;
inline constexpr size_t kMaxEnvBytes = 256 * kKiB;  // names and values together
// `workdir`: PATH_MAX.
inline constexpr size_t kMaxWorkdirLength = 4096;
// `constraints.gpu_model`, and a GPU's model, UUID and PCI bus id as an agent reports them.
inline constexpr size_t kMaxGpuModelLength = 256;

// A job's tasks' text (model/job_size.h): every task is launched with its group's command, env
// (secrets' values included) and workdir, so a job costs that text times its tasks on its way to
// the agents. 1,024 tasks of 16 KiB each, or 42 tasks of the most one task may carry (388 KiB);
// 1,024 replicas of 240 KiB of env once made a 246 KB spec a 240 MiB desired state, which held
// the master at 1.3 GB and its agent past the node timeout (issue 26).
inline constexpr int64_t kMaxJobTaskTextBytes = 16 * kMiB;
// The same text over the live tasks of one node, with what Cohort adds to each task's environment
// (framework::EnvironmentBytesBound): what bounds a node's desired state, the answer to each of
// its syncs. Twice a job's, so that a job within its bound fits on an empty node with Cohort's
// variables. A placement that would take a node over it is not carried out: the job waits, and
// says why (docs/job-spec.md, "Limits").
inline constexpr int64_t kMaxNodeTaskTextBytes = 2 * kMaxJobTaskTextBytes;

// Labels, of nodes and in constraints.
inline constexpr size_t kMaxLabels = 64;
inline constexpr size_t kMaxLabelKeyLength = 128;
inline constexpr size_t kMaxLabelValueLength = 256;

// --- Nodes (an agent's registration) ---

// A node id names the node in URLs, task environments and file names:
// [A-Za-z0-9][A-Za-z0-9._-]{0,63}.
inline constexpr size_t kMaxNodeIdLength = 64;
inline constexpr size_t kMaxAddressLength = 253;  // a DNS name
inline constexpr int64_t kMaxNodeGpus = 64;
inline constexpr int64_t kMaxNodeCpus = 16384;
inline constexpr int64_t kMaxNodeMemoryBytes = 64 * kTiB;
inline constexpr int64_t kMaxGpuMemoryBytes = 64 * kTiB;
inline constexpr int kMaxNumaNode = 1023;
inline constexpr int kMaxNvLinks = 256;  // lanes between two GPUs
inline constexpr size_t kMaxVersionLength = 64;

// --- Agent traffic ---

// The most output an agent ships in one log upload; the master takes a little more.
inline constexpr int64_t kMaxLogUploadBytes = 1 * kMiB;

// --- Lists ---

// Lists that grow without end answer a page at a time, with the cursor of the next page
// (docs/api.md): the master never builds every item into one answer, and clients follow `next`.
// Jobs in one answer of GET /api/v1/jobs without `limit`, and the most `limit` may ask for. A
// page of 1,000 jobs is about 0.8 MB of JSON and tens of milliseconds of the event loop
// (docs/performance.md).
inline constexpr size_t kDefaultJobPage = 500;
inline constexpr size_t kMaxJobPage = 1000;
// A job's events in one answer of GET /api/v1/jobs/{id}/events (about 130 bytes each).
inline constexpr size_t kDefaultEventPage = 1000;
inline constexpr size_t kMaxEventPage = 1000;
// However large the items (a job's spec may be 256 KiB, an event of a job of 1,024 tasks 60 KiB),
// a page stops once its JSON (events: their text) reaches this, with `next` set: fewer than
// `limit` items while more remain.
inline constexpr size_t kMaxPageBytes = static_cast<size_t>(4 * kMiB);

}  // namespace cohort
