// Processes seen from the test: how many on the machine have `marker` in their command line (a
// spinner a sandboxed step left behind names itself with `exec -a MARKER`).
#pragma once

#include <algorithm>
#include <cctype>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

namespace lathe::testing {

inline int processes_with(const std::string& marker) {
  int n = 0;
  std::error_code ec;
  for (const auto& e : std::filesystem::directory_iterator("/proc", ec)) {
    const std::string name = e.path().filename();
    if (name.empty() || !std::isdigit(static_cast<unsigned char>(name[0]))) continue;
    std::ifstream in(e.path() / "cmdline");
    std::stringstream ss;
    ss << in.rdbuf();
    std::string cmd = ss.str();
    std::replace(cmd.begin(), cmd.end(), '\0', ' ');
    if (cmd.find(marker) != std::string::npos) ++n;
  }
  return n;
}

}  // namespace lathe::testing
