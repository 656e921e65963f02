// What the exec module's tests share: a file's text (a free port: testing/free_port.h).
#pragma once

#include <fstream>
#include <sstream>
#include <string>

namespace cohort::exec::testing {

inline std::string Slurp(const std::string& path) {
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

}  // namespace cohort::exec::testing
