// Slurm's hostlists: "gpu[01-03,7],login1" stands for gpu01, gpu02, gpu03, gpu7 and login1. Jobs
// read their nodes in this form (SLURM_JOB_NODELIST) and scripts expand it with `scontrol show
// hostnames`, so Cohort writes and reads it exactly as Slurm does (src/common/hostlist.c and the
// scontrol(1) man page, SchedMD/slurm @ 284c3b9, read for behaviour only).
#pragma once

#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

#include "common/status.h"

namespace cohort::slurm {

// The most names one hostlist expands to: Slurm's own bound on a range (MAX_SLURM_NODES, 64K),
// here on the whole list, so that "n[0-999999999]" is refused before it takes any memory.
inline constexpr size_t kMaxHostlistNames = 65536;
// The longest name one hostlist may make (a hostname is at most 253 bytes).
inline constexpr size_t kMaxHostnameBytes = 255;

// Every name of `text`, in its order, duplicates kept (as `scontrol show hostnames`). Names are
// separated by commas, spaces, tabs or newlines outside brackets; a bracket holds numbers and
// ranges ("[01-03,7]"), each range zero-padded to the width of its first number ("[08-10]" is
// 08 09 10, "[8-10]" is 8 9 10); several bracket groups multiply out, the first outermost
// ("rack[1-2]-n[1-2]": rack1-n1 rack1-n2 rack2-n1 rack2-n2). kInvalidArgument naming the part
// that is wrong: an unmatched bracket, a range that is empty, backwards or not numeric, a
// nested bracket, more than kMaxHostlistNames names or a name over kMaxHostnameBytes.
StatusOr<std::vector<std::string>> ExpandHostlist(std::string_view text);

// Slurm's compact form of `names`, in their order (as `scontrol show hostlist`, which neither
// sorts nor removes duplicates: tux2,tux1,tux2 is "tux[2,1-2]"). Runs of names that differ only
// in a rising trailing number share brackets: gpu01,gpu02,gpu03,login1 is "gpu[01-03],login1".
// ExpandHostlist reads it back to `names`, for names without separators or brackets in them
// (hostnames never have them).
std::string CompressHostlist(const std::vector<std::string>& names);

}  // namespace cohort::slurm
