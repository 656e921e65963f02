#include "exec/pipe_chunk.h"

#include <unistd.h>

#include <cerrno>

namespace cohort::exec {

std::string_view ReadChunk(int& pipe, std::span<char> buffer) {
  if (pipe < 0) return {};
  ssize_t n = ::read(pipe, buffer.data(), buffer.size());
  if (n < 0 && (errno == EINTR || errno == EAGAIN)) return {};
  if (n <= 0) {  // its end, or an error no later read gets past
    ::close(pipe);
    pipe = -1;
    return {};
  }
  return {buffer.data(), static_cast<size_t>(n)};
}

}  // namespace cohort::exec
