// Reading what a command writes on a pipe, a chunk at a time: what the exec service sends its
// caller and what `cohort-exec batch` copies to a Slurm script's files both come this way.
#pragma once

#include <span>
#include <string_view>

namespace cohort::exec {

// The next chunk of `pipe`, read into `buffer`: empty when nothing came (a signal, or a
// non-blocking pipe with nothing in it) or the pipe ended, which closes it and sets it to -1.
std::string_view ReadChunk(int& pipe, std::span<char> buffer);

}  // namespace cohort::exec
