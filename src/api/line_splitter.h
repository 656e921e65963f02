// Turns one task's output into the lines a log reader gets, in bounded memory whatever the
// output: a line is held only until it ends or reaches `max_line` bytes, and a longer one goes
// out in pieces of that size.
//
// With a prefix (several tasks share the stream, "[worker/1] "), every piece is a line of its
// own, so that every line of the stream still starts with its task. Without one, the pieces go
// out as they are and the reader gets the task's bytes unchanged.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

namespace cohort::api {

class LineSplitter {
 public:
  static constexpr size_t kDefaultMaxLine = 64 * 1024;

  explicit LineSplitter(std::string prefix, size_t max_line = kDefaultMaxLine);

  // Appends to `out` what of `data` can go out now: ended lines, and pieces of a long one.
  void Feed(std::string_view data, std::string& out);
  // Ends the line under way, if any, with a newline (at the end of a stream or an attempt).
  void Flush(std::string& out);
  // A line of Cohort's own (a marker) after the line under way, prefixed like the task's.
  void Note(std::string_view text, std::string& out);

  // Bytes held of a line that has not ended; never more than `max_line`.
  size_t pending() const { return partial_.size(); }

 private:
  std::string prefix_;
  size_t max_line_;
  std::string partial_;
  bool mid_line_ = false;  // without a prefix: a piece went out and its line has not ended
};

}  // namespace cohort::api
