#include "api/line_splitter.h"

#include <algorithm>

namespace cohort::api {

LineSplitter::LineSplitter(std::string prefix, size_t max_line)
    : prefix_(std::move(prefix)), max_line_(std::max<size_t>(max_line, 1)) {}

void LineSplitter::Feed(std::string_view data, std::string& out) {
  // Each byte is looked at once: the held part of a line is never searched again.
  while (!data.empty()) {
    size_t room = max_line_ - partial_.size();  // at least 1: a full line goes out at once
    size_t newline = data.find('\n');
    if (newline != std::string_view::npos && newline <= room) {
      out += prefix_;
      out += partial_;
      out.append(data.data(), newline + 1);
      partial_.clear();
      mid_line_ = false;
      data.remove_prefix(newline + 1);
      continue;
    }
    if (data.size() < room) {
      partial_.append(data);
      return;
    }
    partial_.append(data.substr(0, room));
    data.remove_prefix(room);
    if (prefix_.empty()) {
      out += partial_;
      mid_line_ = true;
    } else {
      out += prefix_;
      out += partial_;
      out += '\n';
    }
    partial_.clear();
  }
}

void LineSplitter::Flush(std::string& out) {
  if (partial_.empty() && !mid_line_) return;
  out += prefix_;
  out += partial_;
  out += '\n';
  partial_.clear();
  mid_line_ = false;
}

void LineSplitter::Note(std::string_view text, std::string& out) {
  Flush(out);
  out += prefix_;
  out += text;
  out += '\n';
}

}  // namespace cohort::api
